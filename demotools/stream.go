package demotools

import (
	"context"
	"errors"
	"fmt"

	"github.com/splashfabric/splashfabric/workeragent"
)

// Secret is the text one chunk of demo.stream carries. The host's
// redactor for the tool (Redact) replaces it before the chunk is released,
// so a script or client that ever sees it shows that redaction failed.
const Secret = "internal-token"

// Redacted is what Redact puts in place of Secret.
const Redacted = "[redacted]"

// MaxStreamInput bounds the chunk count demo.stream accepts; the stream
// policy stops it far earlier, and the bound keeps a typo from looping.
const MaxStreamInput = 100_000

// chunkSink is the part of workeragent.ChunkWriter the stream tool uses, so
// its loop can be exercised against limits without an agent.
type chunkSink interface{ Write(text string) error }

// stream emits N chunks "chunk i/N", N read from its input, the middle one
// carrying Secret. It treats the chunk writer's ErrStreamLimitExceeded as
// the end of streaming, not a failure (the host would refuse the rest
// anyway), and answers how many chunks went out.
func stream(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
	n, err := parseCount(call.Input.Text)
	if err != nil || n < 1 || n > MaxStreamInput {
		return workeragent.Output{}, workeragent.Permanent(
			fmt.Errorf("%w: want a chunk count from 1 to %d, got %q", ErrInvalidInput, MaxStreamInput, call.Input.Text))
	}
	sent, err := streamChunks(ctx, call.Stream, int(n))
	if err != nil {
		return workeragent.Output{}, err
	}
	return workeragent.Result(fmt.Sprintf("streamed %d chunks", sent)), nil
}

// streamChunks writes the n chunks to w and reports how many were sent.
func streamChunks(ctx context.Context, w chunkSink, n int) (int, error) {
	secretAt := (n + 1) / 2
	for i := 1; i <= n; i++ {
		if ctx.Err() != nil {
			return i - 1, context.Cause(ctx)
		}
		text := fmt.Sprintf("chunk %d/%d", i, n)
		if i == secretAt {
			text += " token=" + Secret
		}
		err := w.Write(text)
		switch {
		case err == nil:
		case errors.Is(err, workeragent.ErrStreamLimitExceeded):
			return i - 1, nil
		case errors.Is(err, workeragent.ErrStreamNotAllowed):
			// The registrations disagree: only the host's stream policy
			// can fix it, not another attempt.
			return i - 1, workeragent.Permanent(err)
		default:
			return i - 1, err
		}
	}
	return n, nil
}
