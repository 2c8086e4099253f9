package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/splashfabric/splashfabric/internal/benchharness"
)

var benchCommand = command{
	name:    "bench",
	summary: "measure the end-to-end path beside two raw JetStream baselines, in one process",
	new:     func() runner { return new(benchConfig) },
}

// benchConfig holds the flags of `splash bench`.
type benchConfig struct {
	ops      int
	inFlight []string
	workers  []string
	claimed  bool
	secure   bool
	dev      bool
	traced   bool
}

func (c *benchConfig) flags(fs *flagSet) {
	fs.intVar(&c.ops, "ops", "SPLASH_BENCH_OPS", 3000, "`number` of operations per cell and runner")
	fs.listVar(&c.inFlight, "inflight", "SPLASH_BENCH_INFLIGHT", []string{"1", "64", "512"}, "comma-separated operations in flight, one cell each")
	fs.listVar(&c.workers, "workers", "SPLASH_BENCH_WORKERS", []string{"1", "4"}, "comma-separated worker counts, one cell each")
	fs.boolVar(&c.claimed, "claimed", "SPLASH_BENCH_CLAIMED", false, "also run a tool that is not idempotent (claimed in the journal before it runs)")
	fs.boolVar(&c.secure, "secure", "SPLASH_BENCH_SECURE", false, "also run (b) and splash over TLS with the JetStream store encrypted, as the compose cluster runs, with ratios to the same runner in plaintext")
	fs.boolVar(&c.traced, "tracing", "SPLASH_BENCH_TRACING", false, "also run splash with every session traced end to end (sampling 1.0, spans exported over OTLP/HTTP to an endpoint that drops them), with ratios to splash untraced in the same cell")
	fs.boolVar(&c.dev, "dev", "SPLASH_BENCH_DEV", false, "also run the stack `splash dev` starts, each operation one submit over its HTTP API that waits for the session's end, beside an in-process splash with durable sessions as dev runs them; with ratios of dev to both")
}

// benchRunner is one row of a cell: a name and what it measures.
type benchRunner struct {
	name string
	mk   benchharness.NewRunner
	// submitEach submits every operation in flight from its own
	// goroutine (benchharness.SubmitEach): a durable session's submission
	// returns only once its ledger's first write is stored.
	submitEach bool
}

func (c *benchConfig) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, args[0])
	}
	if c.ops < 1 {
		return fmt.Errorf("%w: --ops must be positive", errUsage)
	}
	inFlight, err := positiveInts("inflight", c.inFlight)
	if err != nil {
		return err
	}
	workers, err := positiveInts("workers", c.workers)
	if err != nil {
		return err
	}
	if err := setBenchOps(c.ops); err != nil {
		return err
	}
	runners := []benchRunner{
		{name: "(a) core reply", mk: benchharness.CoreReply},
		{name: "(b) durable reply", mk: benchharness.DurableReply},
		{name: "splash", mk: benchharness.Fabric(benchharness.FabricOptions{Idempotent: true})},
	}
	if c.claimed {
		runners = append(runners, benchRunner{name: "splash claimed", mk: benchharness.Fabric(benchharness.FabricOptions{})})
	}
	var secured []benchRunner
	if c.secure {
		secured = []benchRunner{
			{name: "(b) durable reply", mk: benchharness.DurableReplyWith(benchharness.Secured)},
			{name: "splash", mk: benchharness.Fabric(benchharness.FabricOptions{Idempotent: true, Security: benchharness.Secured})},
		}
	}
	var traced []benchRunner
	if c.traced {
		traced = []benchRunner{{name: "splash", mk: benchharness.Fabric(benchharness.FabricOptions{Idempotent: true, Traced: true})}}
	}
	var dev []devCase
	if c.dev {
		runners = append(runners, benchRunner{name: devDurableRow, submitEach: true,
			mk: benchharness.Fabric(benchharness.FabricOptions{Idempotent: true, Archive: true, Durable: true})})
		streams := slices.Max(inFlight) + 16
		dev = []devCase{
			{benchRunner{name: devRow, mk: devBench(streams, a.stderr), submitEach: true}, []string{"splash", devDurableRow}},
			{benchRunner{name: devRow + " --restart fail", mk: devBench(streams, a.stderr, "--restart", "fail"), submitEach: true}, []string{"splash"}},
		}
	}
	fmt.Fprintf(a.stdout, "%d operations per row; ratios are splash against (b) measured just before it\n\n", c.ops)
	for _, f := range inFlight {
		for _, w := range workers {
			if err := ctx.Err(); err != nil {
				return err
			}
			plain, err := benchCell(a.stdout, f, w, runners)
			if err != nil {
				return err
			}
			if c.dev {
				if err := benchDev(a.stdout, f, w, dev, plain); err != nil {
					return err
				}
			}
			if len(secured) > 0 {
				header := fmt.Sprintf("in flight %d, workers %d, over TLS with the store encrypted; ratios against the same runner above", f, w)
				if err := benchVariant(a.stdout, header, f, w, secured, plain); err != nil {
					return err
				}
			}
			if len(traced) > 0 {
				header := fmt.Sprintf("in flight %d, workers %d, every session traced (sampling 1.0, OTLP/HTTP); ratios against the same runner untraced above", f, w)
				if err := benchVariant(a.stdout, header, f, w, traced, plain); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// benchCell runs every runner at one in-flight bound and worker count and
// prints them with the ratios the targets are stated in. It returns the
// results by runner name.
func benchCell(w io.Writer, inFlight, workers int, runners []benchRunner) (map[string]testing.BenchmarkResult, error) {
	fmt.Fprintf(w, "in flight %d, workers %d\n", inFlight, workers)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "runner\tops/s\tp50 µs\tp99 µs\tcpu µs/op\tmsgs in/out per op\tops/s ÷ (b)\tp50 ÷ (b)\tp99 ÷ (b)\t")
	var base testing.BenchmarkResult
	results := make(map[string]testing.BenchmarkResult, len(runners))
	for _, r := range runners {
		res, err := benchOne(r, inFlight, workers)
		if err != nil {
			return nil, err
		}
		results[r.name] = res
		if strings.HasPrefix(r.name, "(b)") {
			base = res
		}
		x := res.Extra
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f / %.1f\t", r.name, x["ops/s"], x["p50_µs"], x["p99_µs"], x["cpu_µs/op"], x["msgs_in/op"], x["msgs_out/op"])
		if strings.HasPrefix(r.name, "splash") && base.N > 0 {
			b := base.Extra
			fmt.Fprintf(tw, "%.2f\t%.2f\t%.2f\t\n", x["ops/s"]/b["ops/s"], x["p50_µs"]/b["p50_µs"], x["p99_µs"]/b["p99_µs"])
		} else {
			fmt.Fprint(tw, "\t\t\t\n")
		}
	}
	if err := tw.Flush(); err != nil {
		return nil, err
	}
	_, err := fmt.Fprintln(w)
	return results, err
}

// benchVariant runs variants of runners (secured, traced) in the same
// cell, right after their twins in plain, and prints each against its
// twin: the cost of TLS and encryption at rest, or of tracing, measured in
// one process and run.
func benchVariant(w io.Writer, header string, inFlight, workers int, runners []benchRunner, plain map[string]testing.BenchmarkResult) error {
	fmt.Fprintln(w, header)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "runner\tops/s\tp50 µs\tp99 µs\tcpu µs/op\tops/s ÷ plain\tp50 ÷ plain\tp99 ÷ plain\tcpu ÷ plain\t")
	for _, r := range runners {
		res, err := benchOne(r, inFlight, workers)
		if err != nil {
			return err
		}
		x, p := res.Extra, plain[r.name].Extra
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.0f\t", r.name, x["ops/s"], x["p50_µs"], x["p99_µs"], x["cpu_µs/op"])
		if p == nil {
			fmt.Fprint(tw, "\t\t\t\t\n")
			continue
		}
		fmt.Fprintf(tw, "%.2f\t%.2f\t%.2f\t%.2f\t\n", x["ops/s"]/p["ops/s"], x["p50_µs"]/p["p50_µs"], x["p99_µs"]/p["p99_µs"], x["cpu_µs/op"]/p["cpu_µs/op"])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// The rows `splash bench --dev` adds: dev itself, and the in-process
// runner with the session stores dev turns on.
const (
	devRow        = "splash dev"
	devDurableRow = "splash durable"
)

// devCase is a row of dev's table and the in-process rows it is
// compared with.
type devCase struct {
	benchRunner
	against []string
}

// benchDev runs dev's stack in the same cell, right after the in-process
// runners in plain, and prints each case with its ratios to the
// in-process splash (the figure the bench's targets are stated for) and,
// for dev's default of durable sessions, to the in-process splash with
// durable sessions (the same work dev does, minus HTTP). Dev with
// --restart fail keeps no ledger, as the in-process splash keeps none.
func benchDev(w io.Writer, inFlight, workers int, cases []devCase, plain map[string]testing.BenchmarkResult) error {
	fmt.Fprintf(w, "in flight %d, workers %d, %s: one submit over its HTTP API waiting for the end; ratios to the in-process runners above\n", inFlight, workers, devRow)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "runner\tops/s\tp50 µs\tp99 µs\tcpu µs/op\t")
	for _, c := range cases {
		res, err := benchOne(c.benchRunner, inFlight, workers)
		if err != nil {
			return err
		}
		x := res.Extra
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.0f\t\n", c.name, x["ops/s"], x["p50_µs"], x["p99_µs"], x["cpu_µs/op"])
		for _, against := range c.against {
			p := plain[against].Extra
			if p == nil {
				continue
			}
			fmt.Fprintf(tw, "÷ %s\t%.2f\t%.2f\t%.2f\t%.2f\t\n", against, x["ops/s"]/p["ops/s"], x["p50_µs"]/p["p50_µs"], x["p99_µs"]/p["p99_µs"], x["cpu_µs/op"]/p["cpu_µs/op"])
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// benchOne runs one runner in one cell.
func benchOne(r benchRunner, inFlight, workers int) (testing.BenchmarkResult, error) {
	submit := benchharness.Submitters(4)
	if r.submitEach {
		submit = benchharness.SubmitEach()
	}
	res := testing.Benchmark(func(b *testing.B) {
		benchharness.InFlight(b, inFlight, workers, r.mk, submit, benchharness.ReportCPU())
	})
	if res.N == 0 {
		return res, fmt.Errorf("bench: %s at %d in flight, %d workers failed", r.name, inFlight, workers)
	}
	return res, nil
}

// setBenchOps fixes b.N for testing.Benchmark: a cell starts a server and
// a cluster, so it must run a known number of operations rather than grow
// N until a time budget is spent.
func setBenchOps(n int) error {
	testing.Init()
	f := flag.Lookup("test.benchtime")
	if f == nil {
		return fmt.Errorf("bench: the testing package has no benchtime flag")
	}
	return f.Value.Set(strconv.Itoa(n) + "x")
}

func positiveInts(name string, vs []string) ([]int, error) {
	out := make([]int, 0, len(vs))
	for _, v := range vs {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%w: --%s: %q is not a positive number", errUsage, name, v)
		}
		out = append(out, n)
	}
	return out, nil
}
