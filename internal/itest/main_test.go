package itest

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test tears its cluster down through t.Cleanup; VerifyTestMain
// fails the run if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
