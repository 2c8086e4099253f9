package host_test

import (
	"fmt"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/toolspec"
)

// The reference's first example: a script awaits an external tool, the
// host claims the invocation, hands it to a worker, and completing it
// resumes the script.
func ExampleRuntime_Eval() {
	r := host.NewRuntime(host.Config{})
	remote, err := toolspec.Spec{Name: "text.remote", Description: "Runs in a host-managed worker."}.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := r.RegisterTool(remote); err != nil {
		fmt.Println(err)
		return
	}

	initial, err := r.Eval(`
		let output = await tool.start("text.remote", "release");
		assert(output == "done");
		output.toUpperCase()`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("suspended:", initial.Suspended)

	inv, _ := r.ClaimNextExternalTool()
	fmt.Printf("worker call: %s(%q), attempt %d\n", inv.Tool, inv.Input, inv.Attempt)

	resumed, err := r.CompleteExternalTool(inv.ID, host.Ok("done"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("completed:", resumed.Completed(), resumed.Value)
	// Output:
	// suspended: true
	// worker call: text.remote("release"), attempt 1
	// completed: true DONE
}

// A script failure is a result, not an error: here the worker's answer
// fails the script's assertion.
func ExampleRuntime_Eval_failure() {
	r := host.NewRuntime(host.Config{})
	remote, err := toolspec.Spec{Name: "text.remote"}.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := r.RegisterTool(remote); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := r.Eval(`let output = await tool.start("text.remote", "release"); assert(output == "done", "worker said " + output)`); err != nil {
		fmt.Println(err)
		return
	}
	inv, _ := r.ClaimNextExternalTool()
	resumed, _ := r.CompleteExternalTool(inv.ID, host.Ok("nope"))
	fmt.Println("failed:", resumed.Failed())
	fmt.Println(resumed.Err)
	// Output:
	// failed: true
	// script failed: Error: assertion failed: worker said nope
}
