package benchharness

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/internal/natstest"

	"github.com/splashfabric/splashfabric/internal/testwait"
)

// TestStartServerSecurity checks each protection a runner's server can
// have: with TLS a client that does not trust the run's authority is
// refused, and with an encrypted store a value written through the
// server is absent from its files (and present without).
func TestStartServerSecurity(t *testing.T) {
	cases := []struct {
		name string
		sec  Security
	}{
		{"plain", Security{}},
		{"tls", Security{TLS: true}},
		{"encrypted store", Security{EncryptStore: true}},
		{"secured", Secured},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, tc.sec)
			nc := srv.connect()
			if _, err := nc.TLSConnectionState(); (err == nil) != tc.sec.TLS {
				t.Errorf("client connection TLS: %v, want TLS %v", err, tc.sec.TLS)
			}
			plain, err := nats.Connect(srv.ClientURL(), nats.NoReconnect())
			if err == nil {
				plain.Close()
			}
			if (err == nil) == tc.sec.TLS {
				t.Errorf("client without the authority: err %v, want refused %v", err, tc.sec.TLS)
			}

			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), testwait.Scale(10*time.Second))
			defer cancel()
			kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "at_rest", Storage: jetstream.FileStorage})
			if err != nil {
				t.Fatal(err)
			}
			const marker = "bench-at-rest-marker"
			if _, err := kv.PutString(ctx, "k", marker); err != nil {
				t.Fatal(err)
			}
			store := srv.StoreDir()
			nc.Close()
			srv.Shutdown()
			srv.WaitForShutdown()
			if got := natstest.FilesHold(t, store, marker); got == tc.sec.EncryptStore {
				t.Errorf("marker readable in the store's files: %v, want %v", got, !tc.sec.EncryptStore)
			}
		})
	}
}
