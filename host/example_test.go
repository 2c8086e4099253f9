package host_test

import (
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/toolspec"
)

// A Go program drives one external operation without a script.
func ExampleRuntime_Start() {
	clock := host.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	nonce := host.NewCapabilitySessionNonce([16]byte{15: 1})
	r := host.NewRuntime(host.Config{Clock: clock, SessionNonce: &nonce})
	remote, err := toolspec.Spec{Name: "text.remote", MaxAttempts: 2, Deadline: toolspec.Duration(time.Minute)}.Compile()
	if err != nil {
		panic(err)
	}
	if err := r.RegisterTool(remote); err != nil {
		panic(err)
	}
	p, _ := r.Start("text.remote", "release")
	inv, _ := r.ClaimNextExternalTool()
	fmt.Println(inv.Tool, inv.Input, inv.Attempt, inv.IdempotencyKey, inv.RemainingDeadline)

	retry, _ := r.RetryExternalTool(inv.ID, host.RetryTransient)
	fmt.Println("retry attempt", retry.Attempt, retry.IdempotencyKey == inv.IdempotencyKey)

	if _, err := r.CompleteExternalTool(inv.ID, host.Ok("done")); err != nil {
		panic(err)
	}
	s, _ := p.Settled()
	fmt.Println(s.Output)
	for _, e := range r.DrainAudit() {
		fmt.Println(e.Seq, e.ID, e.Outcome, e.Attempt)
	}
	// Output:
	// text.remote release 1 sk1-00000000000000000000000000000001-1 1m0s
	// retry attempt 2 true
	// done
	// 1 op-1 started 0
	// 2 op-1 claimed 1
	// 3 op-1 retry_scheduled 2
	// 4 op-1 succeeded 2
}

// A session may be limited to some tools: "*" stands for one segment of a
// dot-separated name, a final ">" for one or more.
func ExampleParseToolPatterns() {
	tools, err := host.ParseToolPatterns([]string{"text.*", "demo.upper"})
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"text.remote", "text.json.sum", "demo.upper", "demo.echo"} {
		fmt.Println(name, tools.Match(name))
	}
	r := host.NewRuntime(host.Config{Tools: tools.Strings()})
	echo, err := toolspec.Spec{Name: "demo.echo"}.Compile()
	if err != nil {
		panic(err)
	}
	_ = r.RegisterTool(echo)
	_, err = r.Start("demo.echo", "hi")
	fmt.Println(err)
	fmt.Println(r.CallsUsed())
	// Output:
	// text.remote true
	// text.json.sum false
	// demo.upper true
	// demo.echo false
	// host: tool not granted: "demo.echo" is not among the session's tools ["text.*" "demo.upper"]
	// 0
}
