package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

// TestDevAnswersForSessionsOfAnEarlierProcess stops `splash dev` while two
// scripts wait on a long sleep and starts it again on the same data
// directory: the new process carries on the session that may be resumed
// (the default), answers for the one submitted with restart "fail" as
// failed with host_stopped, and for its finished one as it ended.
func TestDevAnswersForSessionsOfAnEarlierProcess(t *testing.T) {
	const token = "test-token"
	dir := t.TempDir()
	start := func() (*proc, *apiclient.Client) {
		dev := startSplash(t, "dev", "--log-format", "json", "--data-dir", dir,
			"--api-addr", "127.0.0.1:0", "--nats-port", "-1", "--api-token", token, "--workers", "1")
		return dev, dev.client(t, token)
	}
	dev, c := start()
	ctx := t.Context()
	done, err := c.Submit(ctx, apiclient.SubmitRequest{Source: `"finished"`})
	if err != nil || done.State != apiclient.StateCompleted {
		t.Fatalf("submit: %+v, %v", done, err)
	}
	held, err := c.Submit(ctx, apiclient.SubmitRequest{Source: `await tool.start("demo.sleep", "25s")`, Restart: "fail"})
	if err != nil || held.State != apiclient.StateSuspended {
		t.Fatalf("submit: %+v, %v", held, err)
	}
	resumed, err := c.Submit(ctx, apiclient.SubmitRequest{Source: `await tool.start("demo.sleep", "1s"); "slept"`})
	if err != nil || resumed.State != apiclient.StateSuspended {
		t.Fatalf("submit: %+v, %v", resumed, err)
	}
	for _, id := range []string{held.ID, resumed.ID} {
		testwait.Until(t, 0, "the sleep claimed", func() bool {
			s, err := c.Session(ctx, id)
			return err == nil && len(s.Operations) == 1 && s.Operations[0].State == "claimed"
		})
	}
	if err := dev.stop(t); err != nil {
		t.Fatalf("dev exit: %v", err)
	}

	dev, c = start()
	defer func() {
		if err := dev.stop(t); err != nil {
			t.Errorf("dev exit: %v", err)
		}
	}()
	lost, err := c.Session(ctx, held.ID)
	if err != nil {
		t.Fatal(err)
	}
	if lost.State != apiclient.StateFailed || lost.ErrorCode != apiclient.ErrorHostStopped || !strings.Contains(lost.Error, "stopped") {
		t.Fatalf("held session after the restart: %+v", lost)
	}
	testwait.Until(t, 0, "the resumed session to complete", func() bool {
		s, err := c.Session(ctx, resumed.ID)
		return err == nil && s.State == apiclient.StateCompleted && s.Value != nil && *s.Value == "slept"
	})
	kept, err := c.Session(ctx, done.ID)
	if err != nil || kept.State != apiclient.StateCompleted || kept.Value == nil || *kept.Value != "finished" {
		t.Fatalf("finished session after the restart: %+v, %v", kept, err)
	}
	if _, err := c.Session(ctx, "s-dev-000000000000-1"); !errors.Is(err, apiclient.ErrUnknownSession) {
		t.Fatalf("session of an unknown incarnation: %v", err)
	}
}

// TestDevKilledMidCallRunsTheCallAgain kills `splash dev` (SIGKILL: its
// workers die with it) while 200 scripts wait on six-second sleeps (four
// workers: room for them all at once, as in production), and
// starts it again on the same data directory: each call, whose worker is
// gone, is delivered again within dev's ack wait and, the tool being
// idempotent, runs again, so every script completes, well before the
// calls' 30s deadline would have ended them timed out.
func TestDevKilledMidCallRunsTheCallAgain(t *testing.T) {
	const token, scripts = "test-token", 200
	dir := t.TempDir()
	start := func() (*proc, *apiclient.Client) {
		dev := startSplash(t, "dev", "--log-format", "json", "--data-dir", dir,
			"--api-addr", "127.0.0.1:0", "--nats-port", "-1", "--api-token", token, "--workers", "4")
		return dev, dev.client(t, token)
	}
	dev, c := start()
	ctx := t.Context()
	ids := make([]string, scripts)
	for i := range ids {
		s, err := c.Submit(ctx, apiclient.SubmitRequest{Source: fmt.Sprintf(`await tool.start("demo.sleep", "6s"); return "slept %d"`, i)})
		if err != nil || s.State != apiclient.StateSuspended {
			t.Fatalf("submit %d: %+v, %v", i, s, err)
		}
		ids[i] = s.ID
	}
	testwait.Until(t, 0, "every sleep claimed", func() bool {
		got, err := c.Session(ctx, ids[len(ids)-1])
		return err == nil && len(got.Operations) == 1 && got.Operations[0].State == "claimed"
	})
	if err := dev.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-dev.done

	dev, c = start()
	defer func() {
		if err := dev.stop(t); err != nil {
			t.Errorf("dev exit: %v", err)
		}
	}()
	for i, id := range ids {
		var got apiclient.Session
		var err error
		testwait.Until(t, time.Minute, "session "+id+" to end", func() bool {
			got, err = c.Session(ctx, id)
			return err == nil && got.Terminal()
		})
		if want := fmt.Sprintf("slept %d", i); got.State != apiclient.StateCompleted || valueOf(got) != want {
			t.Fatalf("script %d after a kill mid-call: %s %q (%s)", i, got.State, valueOf(got), got.Error)
		}
	}
}

func valueOf(s apiclient.Session) string {
	if s.Value == nil {
		return ""
	}
	return *s.Value
}
