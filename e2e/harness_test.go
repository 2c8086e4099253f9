package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/pooltest"
	"github.com/splashfabric/splashfabric/protocol"

	"github.com/splashfabric/splashfabric/internal/testwait"
)

// image is the image every service runs.
func image() string {
	if s := os.Getenv("SPLASH_E2E_IMAGE"); s != "" {
		return s
	}
	return "splash:dev"
}

// workerImage is the image of the services that run process tools
// (toolworker): the splash image with Bubblewrap, python3 and the SDK.
func workerImage() string {
	if s := os.Getenv("SPLASH_E2E_WORKER_IMAGE"); s != "" {
		return s
	}
	return "splash-worker:dev"
}

var (
	dockerOnce sync.Once
	dockerErr  error
	composeCmd []string

	buildOnce sync.Once
	buildErr  error
)

// requireDocker skips the test when no Docker engine answers, or fails it
// when SPLASH_E2E=require, and finds the compose CLI.
func requireDocker(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: -short")
	}
	// Minutes of containers are not for every `go test ./...` (.ci/run's
	// race pass would run them a second time): scripts/e2e.sh asks.
	switch os.Getenv("SPLASH_E2E") {
	case "1", "require":
	default:
		t.Skip("e2e: the compose scenarios run with SPLASH_E2E=1 (skip when no Docker engine answers) or SPLASH_E2E=require (fail then); see scripts/e2e.sh")
	}
	dockerOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(30*time.Second))
		defer cancel()
		if out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
			dockerErr = fmt.Errorf("no Docker engine answers (docker info: %v: %s)", err, bytes.TrimSpace(out))
			return
		}
		// The compose plugin if it answers, else the standalone binary.
		for _, c := range [][]string{{"docker", "compose"}, {"docker-compose"}} {
			args := append(append([]string(nil), c[1:]...), "version")
			if err := exec.CommandContext(ctx, c[0], args...).Run(); err == nil {
				composeCmd = c
				return
			}
		}
		dockerErr = errors.New("the Docker engine answers but neither `docker compose` nor `docker-compose` does")
	})
	if dockerErr != nil {
		if os.Getenv("SPLASH_E2E") == "require" {
			t.Fatalf("e2e: %v (SPLASH_E2E=require)", dockerErr)
		}
		t.Skipf("e2e: %v; set SPLASH_E2E=require to fail instead", dockerErr)
	}
}

// requireImage builds the binary and the image once per test binary.
func requireImage(t *testing.T) {
	t.Helper()
	requireDocker(t)
	buildOnce.Do(func() {
		if os.Getenv("SPLASH_E2E_SKIP_BUILD") == "1" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(repoRoot(t), "scripts", "build-image.sh"), image())
		cmd.Dir = repoRoot(t)
		cmd.Env = append(os.Environ(), "SPLASH_WORKER_IMAGE="+workerImage())
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("scripts/build-image.sh: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

// stack is one compose project of docker-compose.yml.
type stack struct {
	t       *testing.T
	project string
	envFile string
	secrets map[string]string
	// caFile is the deployment's certificate authority: every NATS
	// client of the tests trusts it, as the services do.
	caFile string
	// pools are the deployment's worker pools with their real
	// credentials, as gen-secrets.sh wrote them.
	pools map[string]*pooltest.Pool
	// secretsDir is where gen-secrets.sh wrote them.
	secretsDir string
	begun      time.Time

	mu sync.Mutex
	// failures are the scenario's own failed checks (errorf, fatalf),
	// repeated after its logs so that the end of a long output names
	// them.
	failures []string
}

// logf logs msg with the time since the stack was prepared, so a
// scenario's output shows where its minutes go.
func (s *stack) logf(format string, args ...any) {
	s.t.Helper()
	s.t.Logf("[%5.1fs] %s", time.Since(s.begun).Seconds(), fmt.Sprintf(format, args...))
}

// errorf fails the test with a message the teardown repeats.
func (s *stack) errorf(format string, args ...any) {
	s.t.Helper()
	s.note(format, args...)
	s.t.Errorf(format, args...)
}

// fatalf is errorf that stops the test.
func (s *stack) fatalf(format string, args ...any) {
	s.t.Helper()
	s.note(format, args...)
	s.t.Fatalf(format, args...)
}

func (s *stack) note(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, fmt.Sprintf("[%5.1fs] ", time.Since(s.begun).Seconds())+fmt.Sprintf(format, args...))
}

// newStack prepares a project with a unique name and fresh secrets, and
// arranges for it to be taken down (volumes included) when the test ends,
// with its logs in the test output if the test failed.
func newStack(t *testing.T) *stack {
	t.Helper()
	requireImage(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	s := &stack{t: t, project: "splashe2e" + hex.EncodeToString(b[:]), begun: time.Now()}
	dir := filepath.Join(t.TempDir(), "secrets")
	cmd := exec.Command(filepath.Join(repoRoot(t), "deploy", "compose", "gen-secrets.sh"), dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen-secrets.sh: %v\n%s", err, out)
	}
	s.envFile = filepath.Join(dir, "compose.env")
	s.caFile = filepath.Join(dir, "tls", "ca.pem")
	s.secrets = readEnvFile(t, s.envFile)
	s.secretsDir = dir
	s.pools = readPools(t, dir)
	t.Cleanup(s.teardown)
	return s
}

// readPools reads the pools gen-secrets.sh wrote into dir: pools.json
// names each and its tools, pool-keys/ and pool-nkeys/ hold its ring and
// nkey seed.
func readPools(t *testing.T, dir string) map[string]*pooltest.Pool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "pools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Pools []struct {
			Name  string   `json:"name"`
			Tools []string `json:"tools"`
		} `json:"pools"`
	}
	if err := json.Unmarshal(raw, &manifest); err != nil {
		t.Fatal(err)
	}
	out := map[string]*pooltest.Pool{}
	for _, p := range manifest.Pools {
		ring, err := os.ReadFile(filepath.Join(dir, "pool-keys", p.Name+".keys"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := protocol.ParseKeyRing(string(ring))
		if err != nil {
			t.Fatalf("pool %s ring: %v", p.Name, err)
		}
		seed, err := os.ReadFile(filepath.Join(dir, "pool-nkeys", p.Name+".nk"))
		if err != nil {
			t.Fatal(err)
		}
		kp, err := nkeys.FromSeed(bytes.TrimSpace(seed))
		if err != nil {
			t.Fatalf("pool %s nkey: %v", p.Name, err)
		}
		out[p.Name] = &pooltest.Pool{Name: p.Name, Tools: p.Tools, Key: kp, Ring: r}
	}
	if out["demo"] == nil || out["text"] == nil {
		t.Fatalf("pools.json lists %v, want demo and text", manifest.Pools)
	}
	return out
}

func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		m[k] = v
	}
	return m
}

// compose runs the compose CLI on the project and returns its output.
func (s *stack) compose(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	full := append(append([]string(nil), composeCmd[1:]...),
		"--project-name", s.project,
		"--project-directory", repoRoot(s.t),
		"--file", filepath.Join(repoRoot(s.t), "docker-compose.yml"),
		"--env-file", s.envFile)
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, composeCmd[0], full...)
	cmd.Dir = repoRoot(s.t)
	// Free loopback ports for the API and Prometheus, the image the
	// harness built.
	cmd.Env = append(os.Environ(), "SPLASH_API_PORT=", "SPLASH_PROMETHEUS_PORT=", "SPLASH_IMAGE="+image(), "SPLASH_WORKER_IMAGE="+workerImage(), "COMPOSE_INTERACTIVE_NO_CLI=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", composeCmd[0], strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// mustCompose is compose that fails the test on error.
func (s *stack) mustCompose(args ...string) string {
	s.t.Helper()
	out, err := s.compose(3*time.Minute, args...)
	if err != nil {
		s.fatalf("%v", err)
	}
	return out
}

func (s *stack) teardown() {
	if s.t.Failed() {
		s.dumpLogs()
		if os.Getenv("SPLASH_E2E_KEEP") == "1" {
			s.t.Logf("SPLASH_E2E_KEEP=1: project %s left running (env file %s)", s.project, s.envFile)
			return
		}
	}
	if _, err := s.compose(3*time.Minute, "down", "-v", "--remove-orphans", "--timeout", "5"); err != nil {
		s.t.Logf("teardown: %v", err)
	}
	s.logf("down")
}

// dumpLogs keeps a failed scenario's compose logs: all of them in a file
// (SPLASH_E2E_LOGS, a directory, or the system's temporary one), their
// warnings and errors in the test output, followed by the scenario's own
// failed checks, which those logs would otherwise push out of sight.
func (s *stack) dumpLogs() {
	out, err := s.compose(time.Minute, "logs", "--no-color", "--timestamps")
	switch {
	case err != nil:
		s.t.Logf("compose logs: %v", err)
	default:
		dir := os.Getenv("SPLASH_E2E_LOGS")
		if dir == "" {
			dir = filepath.Join(os.TempDir(), "splash-e2e-logs")
		}
		file := filepath.Join(dir, s.t.Name()+"-"+s.project+".log")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			s.t.Logf("compose logs: %v", err)
		} else if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
			s.t.Logf("compose logs: %v", err)
		} else {
			s.t.Logf("compose logs of %s in %s", s.project, file)
		}
		s.t.Logf("their warnings and errors:\n%s", tail(notable(out), 300))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failures) > 0 {
		s.t.Logf("%s failed on:\n\t%s", s.t.Name(), strings.Join(s.failures, "\n\t"))
	}
}

// notable keeps the log lines above INFO (and any a service wrote other
// than through its logger, such as a panic).
func notable(logs string) string {
	var keep []string
	for _, line := range strings.Split(logs, "\n") {
		l := strings.ToLower(line)
		if strings.Contains(l, "level=info") || strings.Contains(l, "level=debug") || strings.TrimSpace(line) == "" {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n")
}

// tail keeps the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) <= n {
		return s
	}
	return fmt.Sprintf("[%d earlier lines cut]\n", len(lines)-n) + strings.Join(lines[len(lines)-n:], "\n")
}

// up starts services (all when none is named) with the given number of
// workers and waits until every container of the project is healthy.
func (s *stack) up(workers int, services ...string) {
	s.t.Helper()
	args := []string{"up", "-d", "--no-color"}
	if workers >= 0 {
		args = append(args, "--scale", fmt.Sprintf("worker=%d", workers))
	}
	s.mustCompose(append(args, services...)...)
	s.waitHealthy(3 * time.Minute)
	s.logf("up (workers %d) %v: healthy", workers, services)
}

// containers lists the project's container ids of service (all services
// when empty), running or not.
func (s *stack) containers(service string) []string {
	s.t.Helper()
	args := []string{"ps", "-q"}
	if service != "" {
		args = append(args, service)
	}
	return strings.Fields(s.mustCompose(args...))
}

type containerState struct {
	Name   string
	Config struct{ Hostname string }
	State  struct {
		Status  string
		Running bool
		Health  *struct{ Status string }
	}
	NetworkSettings struct {
		Networks map[string]struct{ IPAddress string }
	}
}

func (s *stack) inspect(ids ...string) []containerState {
	s.t.Helper()
	if len(ids) == 0 {
		return nil
	}
	out, err := exec.Command("docker", append([]string{"inspect"}, ids...)...).Output()
	if err != nil {
		s.fatalf("docker inspect: %v", err)
	}
	var st []containerState
	if err := json.Unmarshal(out, &st); err != nil {
		s.fatalf("%v", err)
	}
	return st
}

// waitHealthy waits until every running container of the project reports
// healthy, failing fast when one has exited or turned unhealthy.
func (s *stack) waitHealthy(timeout time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(testwait.Scale(timeout))
	// Docker offers no event to wait on for health, so poll it.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for ; ; <-tick.C {
		var waiting []string
		for _, c := range s.inspect(s.containers("")...) {
			switch {
			case !c.State.Running:
				s.fatalf("container %s is %s", c.Name, c.State.Status)
			case c.State.Health == nil:
			case c.State.Health.Status == "unhealthy":
				s.fatalf("container %s is unhealthy", c.Name)
			case c.State.Health.Status != "healthy":
				waiting = append(waiting, c.Name+" "+c.State.Health.Status)
			}
		}
		if len(waiting) == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.fatalf("not healthy after %v: %v", timeout, waiting)
		}
	}
}

// port returns the loopback address a service's container port is
// published on.
func (s *stack) port(service string, port int) string {
	s.t.Helper()
	out := strings.TrimSpace(s.mustCompose("port", service, fmt.Sprint(port)))
	if out == "" || strings.HasSuffix(out, ":0") {
		s.fatalf("%s:%d is not published (%q)", service, port, out)
	}
	return out
}

// apiURL is the host API's base URL on loopback.
func (s *stack) apiURL() string { return "http://" + s.port("host", 8080) }

// apiToken is the host API's bearer token.
func (s *stack) apiToken() string { return s.secrets["SPLASH_API_TOKEN"] }

// natsURLs are the three nodes' client ports on loopback.
func (s *stack) natsURLs() string {
	s.t.Helper()
	var urls []string
	for _, n := range []string{"n1", "n2", "n3"} {
		urls = append(urls, "nats://"+s.port(n, 4222))
	}
	return strings.Join(urls, ",")
}

// tls is the option every NATS client of the tests connects with: TLS,
// verified against the deployment's authority, as the services connect.
func (s *stack) tls() nats.Option { return nats.RootCAs(s.caFile) }

// connect opens a NATS connection as user (empty: anonymous) with
// password and the user's inbox prefix, over TLS; it is closed when the
// test ends.
func (s *stack) connect(user string, opts ...nats.Option) (*nats.Conn, error) {
	s.t.Helper()
	opts = append(opts, s.tls())
	if user != "" {
		opts = append(opts, nats.UserInfo(user, s.secrets["SPLASH_NATS_"+strings.ToUpper(user)+"_PASSWORD"]),
			nats.CustomInboxPrefix(fabric.InboxPrefix(user)))
	}
	opts = append(opts, nats.Name("e2e-"+user), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	nc, err := nats.Connect(s.natsURLs(), opts...)
	if err != nil {
		return nil, err
	}
	s.t.Cleanup(nc.Close)
	return nc, nil
}

// connectPool opens a NATS connection with a pool's nkey and inbox
// prefix, over TLS, as its workers connect; it is closed when the test
// ends.
func (s *stack) connectPool(pool string, opts ...nats.Option) (*nats.Conn, error) {
	s.t.Helper()
	opts = append(append(opts, s.tls(), nats.Name("e2e-pool-"+pool), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond)),
		s.pools[pool].ConnectOptions(s.t)...)
	nc, err := nats.Connect(s.natsURLs(), opts...)
	if err != nil {
		return nil, err
	}
	s.t.Cleanup(nc.Close)
	return nc, nil
}

// opsJS is a JetStream context as the ops user, for the audit.
func (s *stack) opsJS() jetstream.JetStream {
	s.t.Helper()
	nc, err := s.connect("ops")
	if err != nil {
		s.fatalf("connect as ops: %v", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		s.fatalf("%v", err)
	}
	return js
}

func execCommand(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}
