package demotools

import (
	"context"
	"strings"

	"github.com/splashfabric/splashfabric/workeragent"
)

// echo answers its input unchanged: the smallest round trip through the
// fabric, used to check that wiring works before anything else.
func echo(_ context.Context, call *workeragent.Call) (workeragent.Output, error) {
	return workeragent.Result(call.Input.Text), nil
}

// upper answers its input upper-cased, so a test can tell the tool ran
// rather than the input being reflected somewhere on the way.
func upper(_ context.Context, call *workeragent.Call) (workeragent.Output, error) {
	return workeragent.Result(strings.ToUpper(call.Input.Text)), nil
}
