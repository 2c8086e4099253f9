package splashtool_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/sdk/go/splashtool"
	"github.com/splashfabric/splashfabric/sdk/go/splashtool/splashtooltest"
)

// TestServeProcess runs Serve in a real child process (this test binary,
// see TestMain): the key comes through descriptor 3 and a handler's stray
// print goes to stderr, not into the frame stream.
func TestServeProcess(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	p, err := splashtooltest.StartProcess(cmd, session, toolName, testKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	if err := p.Send(invoke("c1", "hello")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	m, err := p.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := wantResult(t, m, "c1", protocol.ResultSucceeded); r.Payload.Text != "HELLO" {
		t.Fatalf("payload %+v", r.Payload)
	}
	_ = p.CloseInput()
	if err := p.Wait(); err != nil {
		t.Fatalf("exit: %v, stderr: %s", err, stderr.String())
	}
	if _, err := p.Next(ctx); !errors.Is(err, splashtooltest.ErrClosed) {
		t.Fatalf("after exit: %v", err)
	}
	if !strings.Contains(stderr.String(), "stray print") {
		t.Fatalf("stderr %q", stderr.String())
	}
}

func TestFromEnvWithoutSession(t *testing.T) {
	t.Setenv(splashtool.EnvSession, "")
	if _, _, err := splashtool.FromEnv(); !errors.Is(err, splashtool.ErrEnvironment) {
		t.Fatalf("FromEnv: %v", err)
	}
	t.Setenv(splashtool.EnvSession, "s")
	t.Setenv(splashtool.EnvKeyFD, "three")
	if _, _, err := splashtool.FromEnv(); !errors.Is(err, splashtool.ErrEnvironment) {
		t.Fatalf("FromEnv: %v", err)
	}
}
