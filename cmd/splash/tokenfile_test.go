package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/httpapi/apitoken"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

func TestToolPatternsFlag(t *testing.T) {
	for in, want := range map[string][]string{
		"":                  nil,
		"none":              {},
		"demo.*":            {"demo.*"},
		" demo.*, text.> ,": {"demo.*", "text.>"},
	} {
		got := toolPatterns(in)
		if !slices.Equal(got, want) || (got == nil) != (want == nil) {
			t.Errorf("toolPatterns(%q) = %#v, want %#v", in, got, want)
		}
	}
}

// `splash host --api-tokens-file` serves the file's tokens with their
// scopes and tools, and the tokens the file holds when it changes.
func TestHostServesItsTokenFile(t *testing.T) {
	srv := natstest.Start(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "frame.key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens.yaml")
	entry := func(name, scopes, tools string) string {
		return "  - {name: " + name + ", sha256: " + apitoken.DigestOf(name+"-secret").String() + ", scopes: [" + scopes + "], tools: [" + tools + "]}\n"
	}
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(tokens+".tmp", []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tokens+".tmp", tokens); err != nil {
			t.Fatal(err)
		}
	}
	write("tokens:\n" + entry("ci", "submit, read", `"demo.upper"`))
	host := startSplash(t, "host", "--log-format", "json", "--nats-url", srv.ClientURL(), "--key-file", keyFile,
		"--api-addr", "127.0.0.1:0", "--api-tokens-file", tokens, "--host-id", "tokens-test")
	rec := host.waitRecord(t, "host ready")
	url, _ := rec["api_url"].(string)
	client := func(name string) *apiclient.Client {
		c, err := apiclient.New(url, name+"-secret")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := context.Background()
	ci := client("ci")

	// No worker runs: a call the session may not make is refused before
	// it would be dispatched, and a script without calls completes.
	s, err := ci.Submit(ctx, apiclient.SubmitRequest{Source: `await tool.start("demo.echo", "x")`, WaitMS: 10000})
	if err != nil || s.State != apiclient.StateFailed || s.ErrorCode != "tool_not_granted" {
		t.Fatalf("a call outside ci's tools: %+v, %v", s, err)
	}
	if _, err := ci.Submit(ctx, apiclient.SubmitRequest{Source: "return 1", Tools: []string{"demo.*"}}); !errors.Is(err, apiclient.ErrToolNotPermitted) {
		t.Fatalf("ci granting demo.*: %v", err)
	}
	if _, err := ci.Cancel(ctx, s.ID, "op-1"); !errors.Is(err, apiclient.ErrMissingScope) {
		t.Fatalf("ci cancelling: %v", err)
	}
	if _, err := client("ops").Operations(ctx); !errors.Is(err, apiclient.ErrUnauthorized) {
		t.Fatalf("ops before it is in the file: %v", err)
	}

	write("tokens:\n" + entry("ci", "submit, read", `"demo.upper"`) + entry("ops", "admin", `">"`))
	host.waitRecord(t, "api tokens reloaded")
	testwait.Until(t, 0, "ops served", func() bool {
		_, err := client("ops").Session(ctx, s.ID)
		return err == nil
	})
	if err := host.stop(t); err != nil {
		t.Fatalf("host exit: %v", err)
	}
}
