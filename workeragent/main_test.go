package workeragent_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(processToolEnv) != "" {
		os.Exit(runProcessTool())
	}
	goleak.VerifyTestMain(m)
}
