package idempotency

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

func TestIsConflict(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"revision mismatch", fmt.Errorf("x: %w", jetstream.ErrKeyRevisionMismatch), true},
		{"key exists", jetstream.ErrKeyExists, true},
		{"single replica code", &jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence, Code: 400}, true},
		// What kv.Create returns on a replicated bucket when it re-creates
		// over a delete marker and loses.
		{"replicated code", &jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequenceConstant, Code: 400}, true},
		{"other api error", &jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamNotFound, Code: 404}, false},
		{"timeout", errors.New("nats: timeout"), false},
	}
	for _, tc := range tests {
		if got := isConflict(tc.err); got != tc.want {
			t.Errorf("%s: isConflict = %v, want %v", tc.name, got, tc.want)
		}
	}
}
