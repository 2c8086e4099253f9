package workflow_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workflow"
)

func TestDecideReconcile(t *testing.T) {
	const (
		wait   = workflow.ReconcileWait
		apply  = workflow.ReconcileApply
		again  = workflow.ReconcileRedispatch
		indet  = workflow.ReconcileIndeterminate
		idem   = true
		claim  = false
		past   = true
		before = false
	)
	cases := []struct {
		state         protocol.OperationState
		idempotent    bool
		horizonPassed bool
		want          workflow.ReconcileAction
	}{
		{protocol.OperationRunning, idem, before, wait},
		{protocol.OperationRunning, idem, past, wait},
		{protocol.OperationRunning, claim, before, wait},
		{protocol.OperationRunning, claim, past, wait},
		{protocol.OperationSucceeded, idem, before, apply},
		{protocol.OperationSucceeded, claim, past, apply},
		{protocol.OperationFailed, idem, past, apply},
		{protocol.OperationFailed, claim, before, apply},
		{protocol.OperationCancelled, idem, before, apply},
		{protocol.OperationCancelled, claim, past, apply},
		{protocol.OperationUnknown, idem, before, wait},
		{protocol.OperationUnknown, claim, before, wait},
		{protocol.OperationUnknown, idem, past, again},
		{protocol.OperationUnknown, claim, past, indet},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/idempotent=%v/horizon=%v", tc.state, tc.idempotent, tc.horizonPassed), func(t *testing.T) {
			got, err := workflow.DecideReconcile(tc.state, tc.idempotent, tc.horizonPassed)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("DecideReconcile = %v, want %v", got, tc.want)
			}
			// The rule the policy exists for: a claimed tool's
			// operation is never sent again.
			if !tc.idempotent && got == workflow.ReconcileRedispatch {
				t.Fatal("a claimed tool's operation would be dispatched twice")
			}
		})
	}
}

func TestDecideReconcileRefusesAnUnknownState(t *testing.T) {
	for _, s := range []protocol.OperationState{"", "done", "RUNNING"} {
		got, err := workflow.DecideReconcile(s, true, true)
		if !errors.Is(err, workflow.ErrInvalidReconcileState) || got != 0 {
			t.Errorf("DecideReconcile(%q) = %v, %v; want 0, ErrInvalidReconcileState", s, got, err)
		}
	}
}

func ExampleDecideReconcile() {
	for _, idempotent := range []bool{true, false} {
		a, _ := workflow.DecideReconcile(protocol.OperationUnknown, idempotent, true)
		fmt.Println(idempotent, a)
	}
	a, _ := workflow.DecideReconcile(protocol.OperationUnknown, false, false)
	fmt.Println(a)
	// Output:
	// true redispatch
	// false indeterminate
	// wait
}
