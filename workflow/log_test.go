package workflow_test

import (
	"testing"

	"github.com/splashfabric/splashfabric/workflow"
	"github.com/splashfabric/splashfabric/workflow/logtest"
)

func TestMemoryLogConformance(t *testing.T) {
	logtest.RunConformance(t, func(*testing.T) func() workflow.Log {
		m := workflow.NewMemoryLog()
		return func() workflow.Log { return m }
	})
}
