package protocol_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
)

func benchMessage() protocol.WorkerMessage {
	return protocol.ResultMessage(protocol.Result{
		RequestID: "01JD8Y3ZK4R6W2N9Q5T7V0X1C3", Attempt: 1, Status: protocol.ResultSucceeded,
		Payload: textPayload("released v1.2.3 to production"),
	})
}

// BenchmarkSealOpen seals and verifies one result frame: with one reused
// Signer (the fabric's hot path), and with a new Signer, hence hmac.New,
// per frame, which is what SealFrame and VerifyFrame cost.
func BenchmarkSealOpen(b *testing.B) {
	msg := benchMessage()
	b.Run("signer", func(b *testing.B) {
		s := protocol.NewSigner(testKey)
		b.ReportAllocs()
		for i := uint64(1); b.Loop(); i++ {
			f, err := s.Seal("req-1", protocol.RoleWorker, i, msg)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Verify(f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hmac-new-per-frame", func(b *testing.B) {
		b.ReportAllocs()
		for i := uint64(1); b.Loop(); i++ {
			f, err := protocol.SealFrame(testKey, "req-1", protocol.RoleWorker, i, msg)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := protocol.VerifyFrame(testKey, f); err != nil {
				b.Fatal(err)
			}
		}
	})
	// wire is the fabric's whole path for one frame: seal, write the line,
	// parse it at the other end and verify.
	b.Run("wire", func(b *testing.B) {
		s := protocol.NewSigner(testKey)
		b.ReportAllocs()
		for i := uint64(1); b.Loop(); i++ {
			f, err := s.Seal("req-1", protocol.RoleWorker, i, msg)
			if err != nil {
				b.Fatal(err)
			}
			line, err := f.ToJSONLine()
			if err != nil {
				b.Fatal(err)
			}
			back, err := protocol.ParseJSONLine(line)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Verify(back); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("authenticator", func(b *testing.B) {
		host, _ := protocol.NewSessionAuthenticator("req-1", testKey, protocol.RoleHost)
		worker, _ := protocol.NewSessionAuthenticator("req-1", testKey, protocol.RoleWorker)
		b.ReportAllocs()
		for b.Loop() {
			f, err := worker.Seal(msg)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := host.Open(f); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTag isolates the MAC over a frame-sized message: one keyed HMAC
// state reset per frame, as Signer does, against hmac.New per frame.
func BenchmarkTag(b *testing.B) {
	f, err := protocol.SealFrame(testKey, "req-1", protocol.RoleWorker, 1, benchMessage())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("hmac-reset", func(b *testing.B) {
		h := hmac.New(sha256.New, testKeyBytes[:])
		var sum [sha256.Size]byte
		b.ReportAllocs()
		for b.Loop() {
			h.Reset()
			h.Write(f.Message)
			h.Sum(sum[:0])
		}
	})
	b.Run("hmac-new", func(b *testing.B) {
		var sum [sha256.Size]byte
		b.ReportAllocs()
		for b.Loop() {
			h := hmac.New(sha256.New, testKeyBytes[:])
			h.Write(f.Message)
			h.Sum(sum[:0])
		}
	})
}

func BenchmarkJSONLine(b *testing.B) {
	f, err := protocol.SealFrame(testKey, "req-1", protocol.RoleWorker, 1, benchMessage())
	if err != nil {
		b.Fatal(err)
	}
	line, _ := f.ToJSONLine()
	b.Run("ToJSONLine", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := f.ToJSONLine(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ParseJSONLine", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := protocol.ParseJSONLine(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSealVerify splits BenchmarkSealOpen/signer into its halves.
func BenchmarkSealVerify(b *testing.B) {
	msg := benchMessage()
	s := protocol.NewSigner(testKey)
	b.Run("Seal", func(b *testing.B) {
		b.ReportAllocs()
		for i := uint64(1); b.Loop(); i++ {
			if _, err := s.Seal("req-1", protocol.RoleWorker, i, msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	f, err := s.Seal("req-1", protocol.RoleWorker, 1, msg)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Verify", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Verify(f); err != nil {
				b.Fatal(err)
			}
		}
	})
}
