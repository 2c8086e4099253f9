package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/splashfabric/splashfabric/internal/otlptest"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

// The console's browser tests drive a real headless Chromium against
// `splash dev` (NATS, host and a worker pool in one child process) with a
// catalog of demo tools and test.say, a Python tool that streams and
// answers whatever it is given.
//
// SPLASH_UI=require turns a missing browser into a failure (.ci/run sets
// it); SPLASH_UI_SHOTS names a directory for the screenshots of each page.

const (
	consoleToken = "console-test-token"
	// payload would run script if any value were written as markup: the
	// tests look for window.__pwned and for any img element.
	payload     = `<img src=x onerror=window.__pwned=1>`
	pollTimeout = 30 * time.Second // stretched by testwait.Slow
	// consoleTraceURL is where the console's sessions link their traces.
	consoleTraceURL = "http://127.0.0.1:16686/trace/{trace_id}"
)

// chromiumPath finds the system's Chromium, or skips (fails under
// SPLASH_UI=require).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium found (looked for chromium, chromium-browser, google-chrome on PATH); the console's browser tests need one: apt-get install chromium"
	if os.Getenv("SPLASH_UI") == "require" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func shotsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SPLASH_UI_SHOTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// consoleEnv is one dev process and one browser, shared by the subtests;
// each subtest opens tabs of its own (a tab's session storage is its own,
// so each signs in).
type consoleEnv struct {
	dev     *proc
	args    []string // dev's, to start it again on the same address and data
	base    string   // the console's URL
	browser context.Context
	shots   string
	// traces receives the spans dev exports: the console's sessions are
	// traced, and link to their traces.
	traces *otlptest.Receiver
}

func startConsoleEnv(t *testing.T) *consoleEnv {
	t.Helper()
	bin := chromiumPath(t)
	python := true
	if _, err := exec.LookPath("python3"); err != nil {
		python = false
	}
	// A fixed address, so the page finds the host again after a restart.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	args := []string{"dev", "--log-format", "json", "--data-dir", t.TempDir(),
		"--api-addr", addr, "--nats-port", "-1", "--api-token", consoleToken, "--workers", "1",
		"--trace-url", consoleTraceURL}
	if python {
		args = append(args, "--catalog", "testdata/console/catalog.yaml")
	} else if os.Getenv("SPLASH_UI") == "require" {
		t.Fatal("python3 is needed for the console's streaming tool")
	}
	traces := otlptest.Start(t)
	dev := startSplashEnv(t, traceEnv(traces), args...)
	rec := dev.waitRecord(t, "dev ready")
	base, _ := rec["console_url"].(string)
	if !strings.HasSuffix(base, "/ui/") {
		t.Fatalf("dev ready: console_url %q", base)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // the tests may run as root, where the sandbox will not start
		chromedp.WindowSize(1280, 800),
		chromedp.Flag("disable-gpu", true),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	if err := chromedp.Do(browser); err != nil { // start the browser
		cancelBrowser()
		cancelAlloc()
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	return &consoleEnv{dev: dev, args: args, base: base, browser: browser, shots: shotsDir(t), traces: traces}
}

// tab is one browser tab of a subtest.
type tab struct {
	t   *testing.T
	ctx context.Context
	env *consoleEnv
}

func (e *consoleEnv) tab(t *testing.T, width, height int64) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(e.browser)
	t.Cleanup(cancel)
	tb := &tab{t: t, ctx: ctx, env: e}
	tb.do(chromedp.EmulateViewport(width, height))
	return tb
}

func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, actions...); err != nil {
		tb.t.Fatalf("browser: %v\npage text:\n%s", err, tb.pageText())
	}
}

func (tb *tab) pageText() string {
	ctx, cancel := context.WithTimeout(tb.ctx, testwait.Scale(5*time.Second))
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return s
}

// eval returns expr's value.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// until waits for the JavaScript condition expr, naming it what.
func (tb *tab) until(what, expr string) {
	tb.t.Helper()
	_, err := chromedp.Run(tb.ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(testwait.Scale(pollTimeout))))
	if err != nil {
		tb.t.Fatalf("waiting for %s (%s): %v\npage text:\n%s", what, expr, err, tb.pageText())
	}
}

// shot writes the tab's viewport as name.png.
func (tb *tab) shot(name string) {
	tb.t.Helper()
	png, err := chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(tb.env.shots, name+".png"), png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
}

func (tb *tab) open(hash string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(tb.env.base + hash))
}

// login signs the tab in through the form.
func (tb *tab) login(token string) {
	tb.t.Helper()
	tb.open("#/sessions")
	tb.do(chromedp.WaitVisible("#login-token"), chromedp.SendKeys("#login-token", token), chromedp.Click("#login-form button[type=submit]"))
}

// run submits source through the run form and waits for the session page;
// it returns the session id.
func (tb *tab) run(source string) string {
	tb.t.Helper()
	return tb.runForm(source, nil)
}

// runForm is run with more of the form filled in: each selector's field
// set to its value (#run-budget, #run-pending, #run-restart).
func (tb *tab) runForm(source string, fields map[string]string) string {
	tb.t.Helper()
	tb.open("#/run")
	tb.do(chromedp.WaitVisible("#run-source"), chromedp.SetValue("#run-source", source))
	for sel, v := range fields {
		tb.do(chromedp.SetValue(sel, v))
	}
	tb.do(chromedp.Click("#run-submit"))
	tb.until("the session page", `location.hash.startsWith("#/sessions/s-") && document.querySelector("#session-state") !== null`)
	return strings.TrimPrefix(eval[string](tb, `location.hash`), "#/sessions/")
}

// untilState waits for the session page to show state.
func (tb *tab) untilState(state string) {
	tb.t.Helper()
	tb.until("session "+state, fmt.Sprintf(`(document.querySelector("#session-state") || {}).textContent === %q`, state))
}

// safe checks that nothing shown ran as markup.
func (tb *tab) safe(where string) {
	tb.t.Helper()
	if pwned := eval[bool](tb, `window.__pwned !== undefined`); pwned {
		tb.t.Fatalf("%s: a value ran as script (window.__pwned set)", where)
	}
	if n := eval[int](tb, `document.querySelectorAll("img").length`); n != 0 {
		tb.t.Fatalf("%s: %d img elements made from values", where, n)
	}
}

func TestConsoleInABrowser(t *testing.T) {
	env := startConsoleEnv(t)

	t.Run("token wrong", func(t *testing.T) {
		tb := env.tab(t, 1280, 800)
		tb.login("not-the-token")
		tb.until("the token-wrong message", `(document.querySelector("#login-error") || {}).textContent.includes("Token wrong") && document.querySelector("#login-error").textContent.includes("401")`)
		if stored := eval[string](tb, `sessionStorage.getItem("splash.token") || ""`); stored != "" {
			t.Fatalf("a refused token stays stored: %q", stored)
		}
		tb.shot("token-wrong")
	})

	t.Run("log in", func(t *testing.T) {
		tb := env.tab(t, 1280, 800)
		tb.open("#/sessions")
		tb.do(chromedp.WaitVisible("#login-token"))
		tb.shot("login")
		tb.login(consoleToken)
		tb.until("the sessions page", `document.querySelector("#session-filter") !== null && document.querySelector("#session-count").textContent !== ""`)
		if got := eval[string](tb, `sessionStorage.getItem("splash.token")`); got != consoleToken {
			t.Fatalf("token kept as %q", got)
		}
		if url := eval[string](tb, `location.href`); strings.Contains(url, consoleToken) {
			t.Fatalf("the token is in the URL: %s", url)
		}
	})

	t.Run("stream", func(t *testing.T) {
		tb := env.tab(t, 1280, 800)
		tb.login(consoleToken)
		tb.until("signed in", `document.querySelector("#session-filter") !== null`)
		tb.run(`return await tool.start("demo.stream", "6")`)
		tb.until("six chunks", `document.querySelectorAll("#chunks .chunk").length === 6`)
		tb.untilState("completed")
		chunks := eval[string](tb, `[...document.querySelectorAll("#chunks .chunk")].map(c => c.textContent).join("\n")`)
		if !strings.Contains(chunks, "chunk 3/6 token=[redacted]") || strings.Contains(chunks, "internal-token") {
			t.Fatalf("chunks shown:\n%s", chunks)
		}
		tb.until("the source", `document.querySelector("#session-source").textContent.includes("demo.stream")`)
		tb.until("the audit log", `document.querySelectorAll("#audit tr").length >= 3`)
		tb.shot("session")
	})

	t.Run("cancel", func(t *testing.T) {
		tb := env.tab(t, 1280, 800)
		tb.login(consoleToken)
		tb.until("signed in", `document.querySelector("#session-filter") !== null`)
		tb.run(`return await tool.start("demo.sleep", "25s")`)
		// A worker holds it once the host sees it left the stream.
		tb.until("op-1 held by a worker", `(document.querySelector('#ops tr[data-op="op-1"]') || {dataset: {}}).dataset.state === "claimed"`)
		// Clicked from the page: the table is redrawn when an operation
		// changes, which would leave a node id stale.
		tb.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#ops tr[data-op="op-1"] button.cancel').click()`))
		tb.until("the disposition", `(document.querySelector('#ops tr[data-op="op-1"]') || {textContent: ""}).textContent.includes("cancel: acknowledged")`)
		tb.until("op-1 cancelled", `document.querySelector('#ops tr[data-op="op-1"]').dataset.state === "cancelled"`)
		tb.untilState("failed")
		tb.shot("cancel")
	})

	t.Run("cancel the session", func(t *testing.T) {
		tb := env.tab(t, 1280, 800)
		tb.login(consoleToken)
		tb.until("signed in", `document.querySelector("#session-filter") !== null`)
		tb.run(`const a = tool.start("demo.sleep", "25s"), b = tool.start("demo.sleep", "25s"); return (await a) + (await b)`)
		tb.until("the session's cancel button", `document.querySelector("#session-cancel") !== null`)
		tb.do(chromedp.Evaluate[chromedp.Void](`document.querySelector("#session-cancel").click()`))
		tb.untilState("cancelled")
		if btn := eval[bool](tb, `document.querySelector("#session-cancel") !== null`); btn {
			t.Fatal("a cancelled session still offers its cancel button")
		}
		tb.until("the error code", `document.querySelector("#session-head").textContent.includes("cancelled")`)
		tb.shot("session-cancelled")
	})

	t.Run("injection", func(t *testing.T) {
		tb := env.tab(t, 1280, 800)
		tb.login(consoleToken)
		tb.until("signed in", `document.querySelector("#session-filter") !== null`)
		js := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		tests := []struct {
			name, source, state, shown string
		}{
			{"value", `return ` + js(payload), "completed", "#session-value"},
			{"error", `throw new Error(` + js(payload) + `)`, "failed", "#session-error"},
			{"tool error", `return await tool.start("demo.sleep", ` + js(payload) + `)`, "failed", "#session-error"},
			{"chunk and tool output", `return await tool.start("test.say", ` + js(payload) + `)`, "completed", "#chunks"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				tb.t = t
				tb.run(tt.source)
				tb.untilState(tt.state)
				tb.until("the payload shown as text", fmt.Sprintf(`document.querySelector(%q).textContent.includes(%s)`, tt.shown, js(payload)))
				tb.safe(tt.name)
			})
		}
		tb.t = t
		tb.open("#/sessions")
		tb.until("the sessions list", `document.querySelectorAll(".session-row").length >= 4`)
		tb.safe("sessions list")
		tb.open("#/tools")
		tb.until("the tools page", `document.querySelector('[data-tool="test.say"]') !== null`)
		if desc := eval[string](tb, `document.querySelector('[data-tool="test.say"] p').textContent`); !strings.Contains(desc, payload) {
			t.Fatalf("test.say's description shown as %q", desc)
		}
		// A tool run without a sandbox is marked; a contained one is not.
		if !eval[bool](tb, `document.querySelector('[data-tool="test.plain"] .uncontained') !== null`) ||
			eval[bool](tb, `document.querySelector('[data-tool="test.say"] .uncontained') !== null`) {
			t.Fatal("the tools page does not mark the uncontained tool alone")
		}
		tb.safe("tools page")
		tb.shot("injection-tools")
	})

	t.Run("filter sessions", func(t *testing.T) {
		tb := env.tab(t, 1280, 800)
		tb.login(consoleToken)
		tb.until("signed in", `document.querySelector("#session-filter") !== null`)
		for _, state := range []string{"failed", "completed"} {
			tb.do(chromedp.SetValue("#session-filter", state))
			tb.do(chromedp.Evaluate[chromedp.Void](`document.querySelector("#session-filter").dispatchEvent(new Event("change"))`))
			tb.until(state+" sessions only", fmt.Sprintf(`location.hash === "#/sessions?state=%s" && document.querySelectorAll(".session-row").length > 0 &&
				[...document.querySelectorAll(".session-row")].every(r => r.dataset.state === %q)`, state, state))
			tb.shot("sessions-" + state)
		}
	})

	t.Run("operations queued and claimed", func(t *testing.T) {
		tb := env.tab(t, 1280, 800)
		tb.login(consoleToken)
		tb.until("signed in", `document.querySelector("#session-filter") !== null`)
		// One worker runs 64 sleeps at once and buffers as many; the rest
		// wait in the stream. The sleeps outlast any wait below (the
		// pool needs minutes to drain them), so queued and claimed rows
		// are both there however slowly the page comes; the session is
		// then cancelled, which frees the pool for the subtests after.
		id := tb.runForm(`let ps = []; for (let i = 0; i < 600; i++) ps.push(tool.start("demo.sleep", "25s")); await Promise.all(ps)`,
			map[string]string{"#run-pending": "600", "#run-budget": "600"})
		tb.until("the session's table, cut", `(document.querySelector("#ops-more") || {}).textContent === "Showing 500 of 600 operations, live ones first."`)
		tb.open("#/operations")
		tb.until("queued and claimed operations", `document.querySelector('.op-row[data-state="queued"]') !== null && document.querySelector('.op-row[data-state="claimed"]') !== null`)
		if rows := eval[int](tb, `document.querySelectorAll(".op-row").length`); rows > 500 {
			t.Errorf("the operations page shows %d rows, more than 500", rows)
		}
		tb.shot("operations")
		tb.open("#/sessions/" + id)
		// Forced: the session ends at once, and the worker is still told,
		// so it stops the sleeps it runs and skips those left in the
		// stream; the subtests after this one need the pool free.
		tb.until("the session's force button", `document.querySelector("#session-force") !== null`)
		tb.do(chromedp.Evaluate[chromedp.Void](`window.confirm = () => true; document.querySelector("#session-force").click()`))
		tb.untilState("cancelled")
	})

	t.Run("sessions the host does not drive", func(t *testing.T) {
		tb := env.tab(t, 1280, 800)
		tb.login(consoleToken)
		tb.until("signed in", `document.querySelector("#session-filter") !== null`)
		for _, tt := range []struct{ name, id, want string }{
			// An incarnation of this host the archive never registered.
			{"session-lost", "s-dev-0123456789ab-1", "Session lost"},
			// Another host's session.
			{"session-elsewhere", "s-otherhost-0123456789ab-1", "Session elsewhere"},
		} {
			tb.open("#/sessions/" + tt.id)
			tb.until(tt.want, fmt.Sprintf(`!document.querySelector("#session-lost").hidden && document.querySelector("#session-lost").textContent.includes(%q)`, tt.want))
			if shown := eval[bool](tb, `!document.querySelector("#session-body").hidden`); shown {
				t.Errorf("%s: the page shows a session it cannot answer for", tt.id)
			}
			tb.shot(tt.name)
		}
	})

	t.Run("sizes", func(t *testing.T) {
		for _, size := range []struct {
			name          string
			width, height int64
		}{{"narrow", 420, 800}, {"wide", 1280, 800}} {
			t.Run(size.name, func(t *testing.T) {
				tb := env.tab(t, size.width, size.height)
				tb.login(consoleToken)
				tb.until("signed in", `document.querySelector("#session-filter") !== null`)
				id := tb.run(`return await tool.start("demo.stream", "3")`)
				tb.untilState("completed")
				// A few live operations, for the operations page.
				tb.run(`return await Promise.all([1, 2, 3].map(i => tool.start("demo.sleep", "8s")))`)
				pages := []struct{ name, hash, ready string }{
					{"sessions", "#/sessions", `document.querySelectorAll(".session-row").length > 0`},
					{"session", "#/sessions/" + id, `document.querySelectorAll("#chunks .chunk").length === 3`},
					{"operations", "#/operations", `document.querySelectorAll(".op-row").length >= 3`},
					{"tools", "#/tools", `document.querySelectorAll(".tool").length > 0`},
					{"charts", "#/charts", `document.querySelectorAll(".chart-card canvas").length > 0`},
					{"run", "#/run", `document.querySelector("#run-source") !== null`},
				}
				for _, p := range pages {
					tb.open(p.hash)
					tb.until(p.name, p.ready)
					// Wide tables scroll in their own boxes; the page never
					// scrolls sideways.
					if over := eval[int](tb, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
						t.Errorf("%s at %dpx is %dpx too wide", p.name, size.width, over)
					}
					tb.shot(size.name + "-" + p.name)
				}
			})
		}
	})

	t.Run("timeline and charts", func(t *testing.T) {
		tb := env.tab(t, 1280, 900)
		tb.login(consoleToken)
		tb.until("signed in", `document.querySelector("#session-filter") !== null`)
		// A call retried once, a call that streams, a call cancelled.
		id := tb.run(`const f = await tool.start("demo.flaky", "1");
			const s = await tool.start("demo.stream", "4");
			try { await tool.start("demo.sleep", "25s") } catch (e) { return f + "; " + s + "; " + e.message }`)
		tb.until("op-3 held by a worker", `(document.querySelector('#ops tr[data-op="op-3"]') || {dataset: {}}).dataset.state === "claimed"`)
		tb.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#ops tr[data-op="op-3"] button.cancel').click()`))
		tb.untilState("completed")
		tb.until("the timeline of the ended session", `document.querySelector("#timeline-note").textContent === "" &&
			document.querySelectorAll('#timeline g.tl-op').length === 3`)
		checks := []struct{ what, expr string }{
			{"op-1 ran twice", `document.querySelectorAll('#timeline g[data-op="op-1"] rect[data-phase="running"]').length === 2`},
			{"op-1's first attempt asked for a retry", `document.querySelector('#timeline g[data-op="op-1"] rect[data-phase="running"][data-attempt="1"]').classList.contains("retry")`},
			{"op-1 waited out a backoff", `document.querySelector('#timeline g[data-op="op-1"] rect[data-phase="backoff"]') !== null`},
			{"op-2's four chunks", `document.querySelectorAll('#timeline g[data-op="op-2"] [data-mark="chunk"]').length === 4`},
			{"op-3's cancellation request", `document.querySelector('#timeline g[data-op="op-3"] [data-mark="cancellation_requested"]') !== null`},
			{"op-3 ended cancelled", `document.querySelector('#timeline g[data-op="op-3"]').dataset.outcome === "cancelled"`},
			{"op-2 succeeded", `document.querySelector('#timeline g[data-op="op-2"]').dataset.outcome === "succeeded"`},
		}
		for _, c := range checks {
			if !eval[bool](tb, c.expr) {
				t.Errorf("timeline: %s: %s", c.what, c.expr)
			}
		}
		// Traced: the session links to its trace, where the host exported it.
		href := eval[string](tb, `document.querySelector("#session-trace").getAttribute("href") || ""`)
		traceID := eval[string](tb, `document.querySelector("#session-trace").textContent`)
		if len(traceID) != 32 || href != strings.ReplaceAll(consoleTraceURL, "{trace_id}", traceID) {
			t.Errorf("trace link %q to %q", traceID, href)
		}
		env.traces.WaitFor(t, pollTimeout, "the session's spans", func(spans []otlptest.Span) bool {
			for _, s := range spans {
				if s.Name == "session" && s.TraceID == traceID && s.Attrs["splash.session.id"] == id {
					return true
				}
			}
			return false
		})
		tb.safe("timeline")
		tb.shot("timeline")

		tb.open("#/charts")
		for _, tool := range []string{"demo.flaky", "demo.stream", "demo.sleep"} {
			card := fmt.Sprintf(`document.querySelector('.chart-card[data-tool=%q]')`, tool)
			tb.until(tool+"'s charts with live data", fmt.Sprintf(`%[1]s !== null &&
				[...%[1]s.querySelectorAll(".chart")].every(c => Number(c.dataset.rows) >= 2 && c.querySelector("canvas") !== null) &&
				Number(%[1]s.querySelector('[data-chart="rate"]').dataset.max) > 0`, card))
		}
		// The calls line is drawn in its colour on the canvas (demo.stream
		// was called, never retried: its calls line is not under another).
		drawn := eval[int](tb, `(() => {
			let n = 0;
			for (const c of document.querySelectorAll('.chart-card[data-tool="demo.stream"] [data-chart="rate"] canvas')) {
				if (!c.width || !c.height) continue;
				const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
				for (let i = 0; i < d.length; i += 4) {
					if (d[i+3] > 0 && Math.abs(d[i] - 0x24) < 40 && Math.abs(d[i+1] - 0x57) < 40 && Math.abs(d[i+2] - 0xc5) < 40) n++;
				}
			}
			return n;
		})()`)
		if drawn == 0 {
			t.Error("the rate chart of demo.stream has no pixel of the calls line")
		}
		tb.safe("charts")
		tb.shot("charts")
	})

	// The host goes away under a page showing a running session, and
	// comes back as a new process that answers for it as stopped.
	t.Run("host unreachable, then the session lost", func(t *testing.T) {
		tb := env.tab(t, 1280, 800)
		tb.login(consoleToken)
		tb.until("signed in", `document.querySelector("#session-filter") !== null`)
		// A session the next process would resume would not be lost.
		tb.runForm(`return await tool.start("demo.sleep", "25s")`, map[string]string{"#run-restart": "fail"})
		tb.until("op-1 held by a worker", `(document.querySelector('#ops tr[data-op="op-1"]') || {dataset: {}}).dataset.state === "claimed"`)
		if err := env.dev.stop(t); err != nil {
			t.Fatalf("dev exit: %v", err)
		}
		tb.until("the unreachable banner", `!document.querySelector("#banner").hidden && document.querySelector("#banner").textContent.includes("Host unreachable")`)
		tb.shot("host-unreachable")
		env.dev = startSplash(t, env.args...)
		env.dev.waitRecord(t, "dev ready")
		tb.until("the banner gone", `document.querySelector("#banner").hidden`)
		tb.until("the session lost", `!document.querySelector("#session-lost").hidden && document.querySelector("#session-lost").textContent.includes("was stopped")`)
		tb.untilState("failed")
		tb.until("op-1 of unknown fate", `document.querySelector('#ops tr[data-op="op-1"]').dataset.state === "unknown"`)
		tb.shot("session-lost-host-stopped")
	})
}
