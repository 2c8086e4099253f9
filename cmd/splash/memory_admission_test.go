package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

// startSplashCapped is startSplash under an address-space limit (ulimit
// -v, in KiB), as the host ran.
func startSplashCapped(t *testing.T, kib int64, args ...string) *proc {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to set the limit with")
	}
	cmd := exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -v %d && exec "$0" "$@"`, kib), splashBinary(t)}, args...)...)
	// The test's binary links the C library (the image's is static):
	// its malloc reserves 64 MiB of address space per thread, which the
	// image's never spends.
	cmd.Env = append(splashEnv(), "MALLOC_ARENA_MAX=1")
	return startProc(t, cmd, "splash (capped)", func(out string) string {
		if i := strings.Index(out, "fatal error"); i >= 0 {
			out = out[i:]
		} else if i := strings.Index(out, "panic:"); i >= 0 {
			out = out[i:]
		}
		return head(out, 4<<10)
	})
}

func head(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// holding240MiB holds 240 MiB, within its session's 256 MiB, across an
// await of demo.sleep.
const holding240MiB = `const kept = []; for (let i = 0; i < 60; i++) kept.push("x".repeat(4 * 2**20) + i); await tool.start("demo.sleep", "15s"); kept.length`

// The reproduction: under a 4 GiB address-space cap, eleven
// sessions each holding 240 MiB across an await killed the host at 2.9 GB
// (twice), and --memory-limit auto chose 80% of the machine. Now auto
// takes half the address space, the host refuses what it cannot hold
// (503 memory_pressure) or fails the largest session (memory_budget), and
// lives: every session it took ends with its value or that code.
func TestElevenSessionsUnderAnAddressSpaceCap(t *testing.T) {
	const token = "test-token"
	dev := startSplashCapped(t, 4<<20, "dev", "--log-format", "json", "--data-dir", t.TempDir(),
		"--api-addr", "127.0.0.1:0", "--nats-port", "-1", "--api-token", token, "--workers", "2", "--restart", "fail")
	lim := dev.waitRecord(t, "memory limit")
	if got, _ := lim["limit_bytes"].(float64); int64(got) != 2<<30 || !strings.Contains(fmt.Sprint(lim["source"]), "RLIMIT_AS") {
		t.Fatalf("memory limit %v from %v, want 2 GiB from RLIMIT_AS", lim["limit_bytes"], lim["source"])
	}
	rec := dev.waitRecord(t, "dev ready")
	apiURL, _ := rec["api_url"].(string)
	c, err := apiclient.New(apiURL, token)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	alive := func(phase string) {
		t.Helper()
		select {
		case <-dev.done:
			t.Fatalf("%s: the host died: %v", phase, dev.err)
		default:
		}
		resp, err := http.Get(apiURL + "/healthz")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: healthz %v %v", phase, resp, err)
		}
		resp.Body.Close()
	}
	// settle waits for every taken session to end, each with its value
	// or memory_budget, and returns how many completed and how many the
	// host failed.
	settle := func(ids []string) (completed, shed int) {
		late := 0
		defer func() {
			if late > 0 {
				t.Logf("%d sessions' demo.sleep timed out: the machine was slower than the tool's deadline", late)
			}
		}()
		for _, id := range ids {
			var s apiclient.Session
			testwait.Until(t, 0, "session "+id+" to end", func() bool {
				s, err = c.Session(ctx, id)
				return err == nil && s.Terminal()
			})
			switch {
			case s.State == apiclient.StateCompleted && s.Value != nil && *s.Value == "60":
				completed++
			case s.State == apiclient.StateFailed && s.ErrorCode == "memory_budget":
				shed++
			case s.State == apiclient.StateFailed && strings.Contains(s.Error, "tool demo.sleep: timed_out"):
				// A host near its memory budget collects often; on a
				// starved machine a call can then outlast the 30 s
				// deadline. It ended, with its code: the host lived.
				late++
			default:
				t.Fatalf("session %s ended %s %q (%s)", id, s.State, s.ErrorCode, s.Error)
			}
		}
		return completed, shed
	}
	submit := func() (string, error) {
		s, err := c.Submit(ctx, apiclient.SubmitRequest{Source: holding240MiB, ExecutionBudgetMS: 10_000})
		var apiErr *apiclient.Error
		if errors.As(err, &apiErr) && (apiErr.Status != http.StatusServiceUnavailable || apiErr.Code != "memory_pressure") {
			t.Fatalf("refusal %d %q, want 503 memory_pressure", apiErr.Status, apiErr.Code)
		}
		return s.ID, err
	}

	// One after the other, as the client did.
	var ids []string
	refused := 0
	for range 11 {
		id, err := submit()
		if err != nil {
			refused++
			continue
		}
		ids = append(ids, id)
	}
	alive("after eleven in a row")
	completed, shed := settle(ids)
	t.Logf("in a row: %d refused (memory_pressure), %d failed (memory_budget), %d completed", refused, shed, completed)
	if refused+shed == 0 || completed == 0 {
		t.Fatal("eleven sessions of 240 MiB in a 2 GiB budget: want some refused or failed, and some completed")
	}
	alive("after they ended")

	// All at once: the host takes them before they grow, and sheds.
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids = ids[:0]
	for range 11 {
		wg.Go(func() {
			if id, err := submit(); err == nil {
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	alive("after eleven at once")
	completed, shed = settle(ids)
	t.Logf("at once: %d refused (memory_pressure), %d failed (memory_budget), %d completed", 11-len(ids), shed, completed)
	alive("after they ended")
	// Its memory back, the host takes scripts again.
	testwait.Until(t, 0, "a submission to be taken again", func() bool {
		s, err := c.Submit(ctx, apiclient.SubmitRequest{Source: `return 1`})
		return err == nil && s.State == apiclient.StateCompleted
	})
}
