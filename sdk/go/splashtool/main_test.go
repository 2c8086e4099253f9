package splashtool_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/splashfabric/splashfabric/sdk/go/splashtool"
)

// childEnv makes the test binary a tool process: TestServeProcess starts
// it again with this variable set, so Serve runs with a real key
// descriptor, stdin and stdout.
const childEnv = "SPLASHTOOL_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		err := splashtool.Serve(func(ctx context.Context, call *splashtool.Call) (splashtool.Output, error) {
			fmt.Println("stray print") // must not reach the frame stream
			return splashtool.Text(strings.ToUpper(call.Input.Text)), nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
