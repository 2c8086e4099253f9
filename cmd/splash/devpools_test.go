package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/internal/pooltest"
)

// TestDevPoolIsolation runs the attack table against `splash dev`, as
// started from the command line: with the "text" pool's real nkey and key
// ring from the data directory, the moves against the "demo" pool are
// refused by dev's NATS node (and counted in its
// splash_nats_violations_total) or by its host (splash_auth_failures_total),
// the genuine demo.sleep answer wins and demo.upper keeps working.
func TestDevPoolIsolation(t *testing.T) {
	dir := t.TempDir()
	const token = "pool-test-token"
	dev := startSplash(t, "dev", "--log-format", "json", "--data-dir", dir,
		"--api-addr", "127.0.0.1:0", "--nats-port", "-1", "--api-token", token, "--workers", "1")
	rec := dev.waitRecord(t, "dev ready")
	apiURL, _ := rec["api_url"].(string)
	natsURL, _ := rec["nats_url"].(string)
	pool := func(name string, tools ...string) *pooltest.Pool {
		t.Helper()
		kp, err := readNKey(filepath.Join(dir, poolNKeysDir, name+poolNKeyExt))
		if err != nil {
			t.Fatal(err)
		}
		ring, err := loadKeyRing(filepath.Join(dir, poolKeysDir, name+poolKeysExt))
		if err != nil {
			t.Fatal(err)
		}
		return &pooltest.Pool{Name: name, Tools: tools, Key: kp, Ring: ring}
	}
	client, err := apiclient.New(apiURL, token)
	if err != nil {
		t.Fatal(err)
	}
	api := &pooltest.APIHost{Client: client, MetricsURL: apiURL + "/metrics"}
	pooltest.Run(t, pooltest.Fabric{
		URL:            natsURL,
		HostID:         devHostID,
		Host:           api,
		Attacker:       pool("text", "demo.upper"),
		Own:            pooltest.Call{Tool: "demo.upper", Input: "mine", Want: "MINE"},
		Victim:         pool("demo"),
		Target:         pooltest.Call{Tool: "demo.sleep", Input: "4s", Want: "slept 4s"},
		NodeViolations: api.NodeViolations,
	})
	// Each refusal is in dev's log with the subject and the pool's key.
	if err := dev.stop(t); err != nil {
		t.Fatalf("splash dev after SIGTERM: %v", err)
	}
	if logs := dev.stderr.String(); !strings.Contains(logs, "Subscription Violation") || !strings.Contains(logs, "Publish Violation") {
		t.Errorf("dev's log names no violation:\n%s", tail(logs, 2000))
	}
	if _, err := os.Stat(filepath.Join(dir, poolsFile)); err != nil {
		t.Errorf("dev wrote no %s: %v", poolsFile, err)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
