// The Splash Fabric operator console. Plain script, no build step.
//
// Every value shown here comes from scripts and tools and is untrusted:
// the DOM is built with createElement and textContent only, never from
// markup. The API token lives in sessionStorage and travels only in the
// Authorization header, never in a URL.
"use strict";

(function () {
  const TOKEN_KEY = "splash.token";
  const POLL_MS = 2000;
  const TERMINAL_OPS = ["succeeded", "failed", "timed_out", "cancelled"];
  // A script may hold thousands of operations and stream thousands of
  // chunks: tables show this many rows, and say how many more there are.
  const MAX_ROWS = 500;
  const MAX_CHUNKS = 1000;
  const main = document.getElementById("main");
  const banner = document.getElementById("banner");
  const conn = document.getElementById("conn");
  const logout = document.getElementById("logout");

  // ---- DOM ----------------------------------------------------------

  // el builds an element. props: class, text, title, href (internal
  // "#/" links only), type, id, data (dataset), on (event handlers),
  // and any other attribute as a string. Children are nodes or strings;
  // strings become text nodes.
  function el(tag, props, ...children) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null || v === false) continue;
      switch (k) {
        case "class": n.className = v; break;
        case "text": n.textContent = String(v); break;
        case "data": for (const [dk, dv] of Object.entries(v)) n.dataset[dk] = String(dv); break;
        case "on": for (const [ev, fn] of Object.entries(v)) n.addEventListener(ev, fn); break;
        case "href": n.setAttribute("href", String(v).startsWith("#/") ? String(v) : "#/"); break;
        default: n.setAttribute(k, v === true ? "" : String(v));
      }
    }
    append(n, children);
    return n;
  }

  function append(n, children) {
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      n.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return n;
  }

  function clear(n) { while (n.firstChild) n.removeChild(n.firstChild); }

  function stateBadge(state, extra) {
    return el("span", { class: "state " + String(state).replace(/[^a-z_]/g, ""), text: state }, extra);
  }

  // ---- time ---------------------------------------------------------

  function ago(iso) {
    const t = Date.parse(iso);
    if (!iso || isNaN(t) || t <= 0) return "";
    let s = Math.max(0, Math.round((Date.now() - t) / 1000));
    if (s < 60) return s + "s ago";
    const m = Math.floor(s / 60);
    if (m < 60) return m + "m " + (s % 60) + "s ago";
    const h = Math.floor(m / 60);
    if (h < 48) return h + "h " + (m % 60) + "m ago";
    return Math.floor(h / 24) + "d ago";
  }

  // when shows a relative time, with the absolute one on hover.
  function when(iso) {
    return el("time", { datetime: iso, title: iso ? new Date(iso).toString() + " (" + iso + ")" : "", text: ago(iso), class: "rel" });
  }

  function refreshTimes() {
    for (const t of document.querySelectorAll("time.rel")) t.textContent = ago(t.getAttribute("datetime"));
  }

  // ---- status line and banner ---------------------------------------

  // showBanner says text at the top; kind is "conn" (the host's
  // reachability, cleared by the next answer) or "page" (the page's own
  // trouble, cleared by the page's next success or a route change).
  function showBanner(text, kind) {
    banner.textContent = text;
    banner.dataset.kind = kind;
    banner.hidden = false;
  }

  function hideBanner(kind) {
    if (kind && banner.dataset.kind !== kind) return;
    banner.hidden = true;
    banner.textContent = "";
    delete banner.dataset.kind;
  }

  function setConn(ok, text) {
    conn.className = "conn " + (ok ? "ok" : "down");
    conn.textContent = text;
  }

  // ---- API ----------------------------------------------------------

  class APIError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  // Unreachable is a failed fetch: the host is down or the network is.
  class Unreachable extends Error {}

  function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

  async function errorOf(resp) {
    let code = "http_" + resp.status, message = resp.statusText || ("HTTP " + resp.status);
    try {
      const body = await resp.json();
      if (body && body.error) {
        code = String(body.error.code || code);
        message = String(body.error.message || message);
      }
    } catch (_) { /* not JSON */ }
    return new APIError(resp.status, code, message);
  }

  async function call(method, path, body, signal) {
    const headers = { "Authorization": "Bearer " + token(), "Accept": "application/json" };
    const init = { method, headers, signal, cache: "no-store", credentials: "omit", redirect: "error" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const resp = await send(path, init);
    return resp.status === 204 ? null : resp.json();
  }

  // send fetches path and returns a successful response; on the way it
  // notes whether the host answered, and a refused token signs out.
  async function send(path, init) {
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (e) {
      if (e.name === "AbortError") throw e;
      throw noteUnreachable(e);
    }
    noteReachable();
    if (resp.status === 401) {
      const err = await errorOf(resp);
      tokenRefused(err);
      throw err;
    }
    if (!resp.ok) throw await errorOf(resp);
    return resp;
  }

  function noteUnreachable(e) {
    setConn(false, "host unreachable");
    main.classList.add("stale");
    showBanner("Host unreachable: the console cannot reach the host at " + location.origin +
      " (" + (e && e.message ? e.message : "network error") + "). Retrying.", "conn");
    return new Unreachable(e && e.message ? e.message : "unreachable");
  }

  function noteReachable() {
    setConn(true, "connected");
    main.classList.remove("stale");
    hideBanner("conn");
  }

  function tokenRefused(err) {
    sessionStorage.removeItem(TOKEN_KEY);
    loginMessage = "Token wrong: the host refused it (401 " + err.code + "). Enter the host's API token.";
    route();
  }

  // events reads a session's Server-Sent Events with fetch, so the token
  // goes in a header (EventSource cannot send one). onEvent gets the event
  // name and its parsed data. It resolves when the stream ends.
  // cursor.last carries the id of the last event across reconnections,
  // sent back as Last-Event-ID so the host resumes after it.
  async function events(id, onEvent, signal, cursor) {
    const headers = { "Authorization": "Bearer " + token(), "Accept": "text/event-stream" };
    if (cursor && cursor.last) headers["Last-Event-ID"] = cursor.last;
    const resp = await send("/v1/sessions/" + encodeURIComponent(id) + "/events", {
      headers,
      signal, cache: "no-store", credentials: "omit", redirect: "error",
    });
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "", name = "message", data = [];
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        let line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.endsWith("\r")) line = line.slice(0, -1);
        if (line === "") {
          if (data.length) {
            let parsed = null;
            try { parsed = JSON.parse(data.join("\n")); } catch (_) { /* skip */ }
            if (parsed !== null) onEvent(name, parsed);
          }
          name = "message"; data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const c = line.indexOf(":");
        const field = c < 0 ? line : line.slice(0, c);
        let v = c < 0 ? "" : line.slice(c + 1);
        if (v.startsWith(" ")) v = v.slice(1);
        if (field === "event") name = v;
        else if (field === "data") data.push(v);
        else if (field === "id" && cursor) cursor.last = v;
      }
    }
  }

  // ---- pages --------------------------------------------------------

  // Each page gets a Page: an abort signal for its fetches and timers,
  // ended when the route changes.
  class Page {
    constructor() {
      this.ctl = new AbortController();
      this.timers = [];
    }
    get signal() { return this.ctl.signal; }
    get live() { return !this.ctl.signal.aborted; }
    every(ms, fn) {
      const tick = async () => {
        if (!this.live) return;
        try {
          await fn();
          if (this.live) hideBanner("page");
        } catch (e) { this.fail(e); }
        if (this.live) this.timers.push(setTimeout(tick, ms));
      };
      tick();
    }
    after(ms, fn) { this.timers.push(setTimeout(() => { if (this.live) fn(); }, ms)); }
    fail(e) {
      if (!this.live || e.name === "AbortError" || e instanceof Unreachable) return;
      if (e instanceof APIError && e.status === 401) return;
      showBanner(e instanceof APIError ? e.code + ": " + e.message : String(e && e.message || e), "page");
    }
    end() {
      this.ctl.abort();
      for (const t of this.timers) clearTimeout(t);
    }
  }

  let page = null;
  let loginMessage = "";

  function route() {
    if (page) page.end();
    page = new Page();
    hideBanner("page");
    clear(main);
    const hash = location.hash || "#/sessions";
    const [path, query] = hash.slice(1).split("?");
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    for (const a of document.querySelectorAll("nav a")) {
      a.classList.toggle("current", a.dataset.route === parts[0]);
    }
    if (!token()) {
      logout.hidden = true;
      renderLogin(page);
      return;
    }
    logout.hidden = false;
    const params = new URLSearchParams(query || "");
    switch (parts[0]) {
      case "sessions":
        if (parts.length > 1) renderSession(page, parts[1]);
        else renderSessions(page, params.get("state") || "");
        break;
      case "operations": renderOperations(page); break;
      case "tools": renderTools(page); break;
      case "charts": renderCharts(page); break;
      case "run": renderRun(page); break;
      default: location.hash = "#/sessions";
    }
  }

  // ---- login --------------------------------------------------------

  function renderLogin(p) {
    const input = el("input", { type: "password", id: "login-token", autocomplete: "off", spellcheck: "false", required: true });
    const msg = el("p", { class: "error", id: "login-error", text: loginMessage });
    const form = el("form", { id: "login-form", on: { submit: async (ev) => {
      ev.preventDefault();
      const t = input.value.trim();
      if (!t) return;
      sessionStorage.setItem(TOKEN_KEY, t);
      loginMessage = "";
      input.value = "";
      try {
        await call("GET", "/v1/operations", undefined, p.signal);
        route();
      } catch (e) {
        if (e instanceof Unreachable) msg.textContent = "Host unreachable: try again when it answers.";
        else if (!(e instanceof APIError && e.status === 401)) msg.textContent = String(e.message);
        if (!(e instanceof APIError && e.status === 401)) sessionStorage.removeItem(TOKEN_KEY);
      }
    } } },
    el("label", { for: "login-token", text: "API token" }),
    input,
    el("p", { class: "muted", text: "The host's API token (splash dev writes it into its data directory). It is kept in this tab only and sent as a bearer header, never in a URL." }),
    el("button", { class: "primary", type: "submit", text: "Sign in" }));
    append(main, [el("div", { class: "card login" }, el("h1", { text: "Sign in" }), msg, form)]);
    input.focus();
  }

  // ---- sessions -----------------------------------------------------

  const STATES = ["", "suspended", "completed", "failed", "cancelled"];

  function renderSessions(p, state) {
    const filter = el("select", { id: "session-filter", on: { change: () => {
      location.hash = "#/sessions" + (filter.value ? "?state=" + encodeURIComponent(filter.value) : "");
    } } }, STATES.map((s) => el("option", { value: s, text: s || "all states", selected: s === state })));
    const body = el("tbody", { id: "sessions" });
    const count = el("span", { class: "muted", id: "session-count" });
    append(main, [
      el("h1", { text: "Sessions" }),
      el("div", { class: "toolbar" }, el("label", { for: "session-filter", text: "State " }), filter, count),
      el("div", { class: "scroll" }, el("table", {},
        el("thead", {}, el("tr", {}, ["Session", "State", "Age", "Tools", "Live ops", "Value or error"].map((h, i) =>
          el("th", { text: h, class: i === 4 ? "hide-narrow" : null })))),
        body)),
    ]);
    p.every(POLL_MS, async () => {
      const q = state ? "?state=" + encodeURIComponent(state) : "";
      const list = await call("GET", "/v1/sessions" + q, undefined, p.signal);
      if (!p.live) return;
      clear(body);
      const sessions = list.sessions || [];
      count.textContent = sessions.length + (sessions.length === 1 ? " session" : " sessions") + " held by this host";
      if (!sessions.length) {
        body.append(el("tr", {}, el("td", { colspan: "6", class: "muted", text: "No sessions" + (state ? " in state " + state : "") + " yet." })));
      }
      for (const s of sessions) {
        const outcome = s.state === "failed" || s.state === "cancelled" ? (s.error_code ? s.error_code + ": " : "") + (s.error || "") : (s.value ?? "");
        body.append(el("tr", { class: "session-row", data: { id: s.id, state: s.state } },
          el("td", { class: "mono" }, el("a", { href: "#/sessions/" + encodeURIComponent(s.id), text: s.id })),
          el("td", {}, stateBadge(s.state)),
          el("td", {}, when(s.created)),
          el("td", { class: "mono", text: (s.tools || []).join(", ") }),
          el("td", { class: "hide-narrow", text: s.operations }),
          el("td", { class: "clip mono outcome", title: outcome, text: outcome })));
      }
    });
  }

  // ---- one session ----------------------------------------------------

  function renderSession(p, id) {
    const head = el("div", { class: "card", id: "session-head" });
    const lost = el("div", { id: "session-lost", class: "error", hidden: true });
    const source = el("pre", { id: "session-source", class: "mono", text: "…" });
    const opsBody = el("tbody", { id: "ops" });
    const chunks = el("ul", { class: "chunks", id: "chunks" });
    const auditBody = el("tbody", { id: "audit" });
    const streamNote = el("span", { class: "muted", id: "stream-note" });
    const details = el("div", { id: "session-body" });
    append(main, [el("h1", {}, "Session ", el("span", { class: "mono", text: id })), lost, details]);
    const timelineBox = el("div", { class: "card timeline", id: "timeline" }, el("p", { class: "muted", text: "…" }));
    append(details, [
      head,
      el("h2", {}, "Timeline ", el("span", { class: "muted", id: "timeline-note" })),
      timelineBox,
      el("h2", { text: "Operations" }),
      el("div", { class: "scroll" }, el("table", {},
        el("thead", {}, el("tr", {}, ["Op", "Tool", "Attempt", "Worker", "State", "Age", ""].map((h) => el("th", { text: h })))),
        opsBody)),
      el("h2", {}, "Chunks ", streamNote),
      el("div", { class: "card" }, chunks),
      el("h2", { text: "Script" }),
      source,
      el("h2", { text: "Audit log" }),
      el("div", { class: "scroll" }, el("table", {},
        el("thead", {}, el("tr", {}, ["Seq", "At", "Op", "Tool", "Attempt", "Outcome", "Detail"].map((h) => el("th", { text: h })))),
        auditBody)),
    ]);

    const ops = new Map(); // op id -> operation, live and finished
    const seenChunks = new Set();
    const seenAudit = new Set();
    const cancelNotes = new Map(); // op id -> text of the cancel request's answer
    const cursor = { last: "" }; // the event stream's position
    let session = null;
    let terminal = false;

    function showHead(s) {
      session = s;
      clear(head);
      const dl = el("dl", { class: "kv" },
        el("dt", { text: "State" }), el("dd", { id: "session-state" }, stateBadge(s.state)),
        el("dt", { text: "Created" }), el("dd", {}, when(s.created)));
      if (s.trace_id) append(dl, [el("dt", { text: "Trace" }), el("dd", {}, traceLink(s.trace_id, s.trace_url))]);
      if (s.state === "completed") append(dl, [el("dt", { text: "Value" }), el("dd", {}, el("pre", { id: "session-value", text: s.value ?? "" }))]);
      if (s.state === "failed" || s.state === "cancelled") {
        append(dl, [el("dt", { text: "Error" }), el("dd", {}, el("pre", { id: "session-error", text: s.error || "" }))]);
        if (s.error_code) append(dl, [el("dt", { text: "Error code" }), el("dd", { class: "mono", text: s.error_code })]);
      }
      head.append(dl);
      if (s.state === "suspended") head.append(sessionCancel(s));
      if (s.error_code === "host_restarted" || s.error_code === "host_stopped") {
        lost.hidden = false;
        lost.textContent = "Session lost: the host process that ran it " + (s.error_code === "host_stopped" ? "was stopped" : "ended (killed or crashed)") +
          " before the script finished. Its operations were not cancelled and may have run, once.";
      }
    }

    // sessionCancel is the operator's end of a session: two-phase first
    // (its workers are asked), forced when they cannot answer.
    function sessionCancel(s) {
      const note = el("span", { class: "disposition note", id: "session-cancel-note", text: sessionCancelNote });
      const ask = (force) => async () => {
        sessionCancelNote = force ? "forcing…" : "cancelling…";
        note.textContent = sessionCancelNote;
        try {
          const r = await call("POST", "/v1/sessions/" + encodeURIComponent(id) + "/cancel" + (force ? "?force=true" : ""), undefined, p.signal);
          sessionCancelNote = r.state === "cancelled" ? "cancelled" : "cancellation requested";
        } catch (e) {
          if (e instanceof APIError) sessionCancelNote = "cancel refused: " + e.code;
          else throw e;
        }
        note.textContent = sessionCancelNote;
      };
      return el("div", { class: "toolbar" },
        el("button", { type: "button", class: "cancel", id: "session-cancel", text: "Cancel session", on: { click: ask(false) } }),
        el("button", { type: "button", class: "cancel", id: "session-force", text: "Force cancel",
          title: "Assert every live operation cancelled without its worker", on: { click: ask(true) } }),
        note);
    }
    let sessionCancelNote = "";

    function mergeOps(list, full) {
      const live = new Set();
      for (const o of list || []) {
        live.add(o.id);
        ops.set(o.id, Object.assign(ops.get(o.id) || {}, o));
      }
      if (full) {
        // An operation gone from the live list has finished; its last
        // state came (or will come) on the stream.
        for (const [k, o] of ops) {
          if (live.has(k) || TERMINAL_OPS.includes(o.state) || o.state === "finished" || o.state === "unknown") continue;
          // A lost session's operations were dispatched and never
          // answered to this host: whether they ran is unknown.
          const lostHost = session && (session.error_code === "host_restarted" || session.error_code === "host_stopped");
          o.state = o.cancel_disposition === "acknowledged" ? "cancelled" : lostHost ? "unknown" : "finished";
        }
      }
      showOps();
    }

    let shownOps = "";
    let drawPending = false;

    // showOps redraws the operations table soon: a burst of operation
    // events (a script starting thousands of calls) costs one redraw.
    function showOps() {
      if (drawPending) return;
      drawPending = true;
      p.after(100, () => { drawPending = false; drawOps(); });
    }

    const isDone = (o) => TERMINAL_OPS.includes(o.state) || o.state === "finished" || o.state === "unknown";

    function drawOps() {
      // Redraw only on a change, so a poll does not replace the button
      // under the operator's pointer.
      const sig = JSON.stringify([[...ops.values()], [...cancelNotes], terminal]);
      if (sig === shownOps) return;
      shownOps = sig;
      clear(opsBody);
      if (!ops.size) opsBody.append(el("tr", {}, el("td", { colspan: "7", class: "muted", text: "No operations." })));
      // Live operations first, each group in start order.
      const sorted = [...ops.values()].sort((a, b) => (isDone(a) - isDone(b)) ||
        Number(String(a.id).slice(3)) - Number(String(b.id).slice(3)));
      if (sorted.length > MAX_ROWS) {
        opsBody.append(el("tr", {}, el("td", { colspan: "7", class: "muted", id: "ops-more",
          text: "Showing " + MAX_ROWS + " of " + sorted.length + " operations, live ones first." })));
      }
      for (const o of sorted.slice(0, MAX_ROWS)) {
        const done = isDone(o);
        const note = cancelNotes.get(o.id);
        const btn = el("button", { type: "button", class: "cancel", text: "Cancel",
          disabled: done || o.state === "cancellation_requested" || terminal,
          on: { click: () => cancel(o) } });
        opsBody.append(el("tr", { data: { op: o.id, state: o.state } },
          el("td", { class: "mono nowrap", text: o.id }),
          el("td", { class: "mono", text: o.tool }),
          el("td", { text: o.attempt }),
          el("td", { class: "mono", text: o.worker || "—" }),
          el("td", {}, stateBadge(o.state),
            o.cancel_disposition ? el("span", { class: "disposition", text: "cancel: " + o.cancel_disposition }) : null,
            note && !o.cancel_disposition ? el("span", { class: "disposition note", text: note }) : null),
          el("td", {}, when(o.since)),
          el("td", {}, btn)));
      }
    }

    async function cancel(o) {
      cancelNotes.set(o.id, "cancel: requesting…");
      showOps();
      try {
        const r = await call("POST", "/v1/sessions/" + encodeURIComponent(id) + "/operations/" + encodeURIComponent(o.id) + "/cancel", undefined, p.signal);
        cancelNotes.set(o.id, "cancel: " + r.cancellation);
        o.state = "cancellation_requested";
      } catch (e) {
        if (e instanceof APIError) cancelNotes.set(o.id, "cancel refused: " + e.code);
        else if (!(e instanceof Unreachable)) throw e;
      }
      showOps();
    }

    function addChunk(c) {
      const key = c.operation + ":" + c.index;
      if (seenChunks.has(key)) return;
      seenChunks.add(key);
      chunks.append(el("li", { class: "chunk", data: { op: c.operation, index: c.index } },
        el("span", { class: "meta", text: c.operation + " #" + c.index + " " + c.tool }), c.text));
      if (chunks.children.length > MAX_CHUNKS) {
        chunks.firstElementChild.remove();
        streamNote.textContent = "(live; the newest " + MAX_CHUNKS + ")";
      }
      chunks.scrollTop = chunks.scrollHeight;
    }

    function addAudit(a) {
      if (seenAudit.has(a.seq)) return;
      seenAudit.add(a.seq);
      const row = el("tr", { data: { seq: a.seq } },
        el("td", { text: a.seq }), el("td", {}, when(a.at)), el("td", { class: "mono nowrap", text: a.operation }),
        el("td", { class: "mono", text: a.tool }), el("td", { text: a.attempt }), el("td", {}, stateBadge(a.outcome)),
        el("td", { class: "clip mono", title: a.detail || "", text: a.detail || (a.bytes ? a.bytes + " bytes" : "") }));
      // Keep seq order however events arrive (stream backlog, then poll).
      const next = [...auditBody.children].find((r) => Number(r.dataset.seq) > a.seq);
      auditBody.insertBefore(row, next || null);
    }

    async function load() {
      try {
        const s = await call("GET", "/v1/sessions/" + encodeURIComponent(id), undefined, p.signal);
        if (!p.live) return;
        showHead(s);
        mergeOps(s.operations, true);
        terminal = s.state !== "suspended";
        if (terminal) streamNote.textContent = "(ended)";
        return s;
      } catch (e) {
        if (e instanceof APIError && e.code === "session_elsewhere") {
          lost.hidden = false;
          lost.textContent = "Session elsewhere: another host drives " + id + " (" + e.message + "); that host's console answers for it.";
          details.hidden = true;
          terminal = true;
          return null;
        }
        if (e instanceof APIError && e.code === "unknown_session") {
          lost.hidden = false;
          lost.textContent = "Session lost: the host cannot answer for " + id + " (" + e.message + "). It never existed here, or its record expired.";
          details.hidden = true;
          terminal = true;
          streamNote.textContent = "";
          return null;
        }
        throw e;
      }
    }

    async function loadAudit() {
      const log = await call("GET", "/v1/sessions/" + encodeURIComponent(id) + "/audit", undefined, p.signal);
      for (const a of log.events || []) addAudit(a);
    }

    async function follow() {
      streamNote.textContent = "(live)";
      try {
        await events(id, (name, data) => {
          switch (name) {
            case "chunk": addChunk(data); break;
            case "audit": addAudit(data); break;
            case "operation": {
              const cur = ops.get(data.id) || {};
              // The stream tells the runtime's state; a claimed operation
              // the host already knows is still queued stays so until a
              // poll says otherwise.
              if (data.state === "claimed" && cur.state === "queued" && !data.worker) data.state = "queued";
              ops.set(data.id, Object.assign(cur, data));
              showOps();
              break;
            }
            case "state":
              showHead(data);
              mergeOps(data.operations, false);
              if (data.state !== "suspended") terminal = true;
              break;
            case "lagged": streamNote.textContent = "(fell behind; reloading)"; break;
          }
        }, p.signal, cursor);
      } catch (e) {
        if (e.name === "AbortError") return;
        if (!(e instanceof Unreachable)) p.fail(e);
      }
      if (!p.live) return;
      if (terminal) {
        streamNote.textContent = "(ended)";
        await load();
        return;
      }
      // The stream ended early (lagged, host restart): read the session
      // again and follow anew.
      streamNote.textContent = "(reconnecting)";
      p.after(POLL_MS, async () => { await load().catch((e) => p.fail(e)); if (!terminal) follow(); });
    }

    (async () => {
      try {
        const s = await load();
        if (!s) return;
        call("GET", "/v1/sessions/" + encodeURIComponent(id) + "/source", undefined, p.signal)
          .then((src) => { source.textContent = src.source + (src.truncated ? "\n[the host kept only the beginning]" : ""); })
          .catch((e) => { source.textContent = e instanceof APIError ? "(" + e.code + ": " + e.message + ")" : "(unavailable)"; });
        await loadAudit();
        follow();
        // The stream says when an operation changes, not when a worker
        // takes a queued one: poll while the script runs.
        p.every(POLL_MS, async () => { if (!terminal) await load(); });
        // The timeline is redrawn while the script runs, and once more
        // after its end.
        let drawnEnd = false;
        p.every(POLL_MS, async () => {
          if (drawnEnd) return;
          const tl = await call("GET", "/v1/sessions/" + encodeURIComponent(id) + "/timeline", undefined, p.signal);
          if (!p.live) return;
          drawTimeline(timelineBox, tl);
          document.getElementById("timeline-note").textContent = tl.ended ? "" : "(live)";
          if (tl.ended) drawnEnd = true;
        });
      } catch (e) { p.fail(e); }
    })();
  }

  // ---- operations -----------------------------------------------------

  function renderOperations(p) {
    const body = el("tbody", { id: "operations" });
    let shown = "";
    const count = el("span", { class: "muted", id: "op-count" });
    append(main, [
      el("h1", { text: "Operations" }),
      el("div", { class: "toolbar" }, count, el("span", { class: "muted", text: "queued: waiting in its tool's stream; claimed: a worker holds it." })),
      el("div", { class: "scroll" }, el("table", {},
        el("thead", {}, el("tr", {}, ["Session", "Op", "Request", "Tool", "State", "Attempt", "Worker", "Age", ""].map((h, i) =>
          el("th", { text: h, class: i === 2 ? "hide-narrow" : null })))),
        body)),
    ]);
    p.every(POLL_MS, async () => {
      const list = await call("GET", "/v1/operations", undefined, p.signal);
      if (!p.live) return;
      const opsList = list.operations || [];
      const by = {};
      for (const o of opsList) by[o.state] = (by[o.state] || 0) + 1;
      count.textContent = opsList.length + " live" + Object.keys(by).sort().map((k) => ", " + by[k] + " " + k).join("") +
        (opsList.length > MAX_ROWS ? "; the oldest " + MAX_ROWS + " shown" : "");
      const sig = JSON.stringify(opsList.slice(0, MAX_ROWS));
      if (sig === shown) return;
      shown = sig;
      clear(body);
      if (!opsList.length) body.append(el("tr", {}, el("td", { colspan: "9", class: "muted", text: "No live operations." })));
      for (const o of opsList.slice(0, MAX_ROWS)) {
        const btn = el("button", { type: "button", class: "cancel", text: "Cancel", disabled: o.state === "cancellation_requested",
          on: { click: async () => {
            btn.disabled = true;
            try { await call("POST", "/v1/operations/" + encodeURIComponent(o.request_id) + "/cancel", undefined, p.signal); }
            catch (e) { p.fail(e); }
          } } });
        body.append(el("tr", { class: "op-row", data: { request: o.request_id, state: o.state } },
          el("td", { class: "mono" }, el("a", { href: "#/sessions/" + encodeURIComponent(o.session), text: o.session })),
          el("td", { class: "mono nowrap", text: o.id }),
          el("td", { class: "mono hide-narrow", text: o.request_id }),
          el("td", { class: "mono", text: o.tool }),
          el("td", {}, stateBadge(o.state), o.cancel_disposition ? el("span", { class: "disposition", text: "cancel: " + o.cancel_disposition }) : null),
          el("td", { text: o.attempt }),
          el("td", { class: "mono", text: o.worker || "—" }),
          el("td", {}, when(o.since)),
          el("td", {}, btn)));
      }
    });
  }

  // ---- tools ----------------------------------------------------------

  function renderTools(p) {
    const grid = el("div", { class: "grid", id: "tools" });
    const open = new Set();
    append(main, [el("h1", { text: "Tools and pools" }), grid]);
    p.every(5000, async () => {
      const list = await call("GET", "/v1/tools", undefined, p.signal);
      if (!p.live) return;
      for (const d of grid.querySelectorAll("details[open]")) open.add(d.dataset.key);
      for (const d of grid.querySelectorAll("details:not([open])")) open.delete(d.dataset.key);
      clear(grid);
      if (!(list.tools || []).length) grid.append(el("p", { class: "muted", text: "The host's catalog is empty." }));
      for (const t of list.tools || []) grid.append(toolCard(t, open));
    });
  }

  function toolCard(t, open) {
    const kv = el("dl", { class: "kv" });
    const row = (k, v) => append(kv, [el("dt", { text: k }), el("dd", {}, v)]);
    row("Format", t.format);
    row("Attempts", String(t.max_attempts));
    row("Deadline", t.deadline || "none");
    row("Flags", [t.idempotent ? "idempotent" : "not idempotent", t.cancellable ? "cancellable" : "not cancellable"].join(", "));
    if (t.uncontained) row("Sandbox", el("span", { class: "warn uncontained", title: "contain: false in the catalog: the tool runs with its worker's user, files, network and /proc", text: "none (contain: false)" }));
    if (t.stream) row("Stream", t.stream.max_chunks + " chunks × " + t.stream.max_chunk_bytes + " B");
    row("Output", t.max_output_bytes + " B at most");
    if (t.pool) {
      row("Queued", el("span", { class: "pool-pending", text: String(t.pool.pending) }));
      row("Running", el("span", { class: "pool-ack-pending", text: String(t.pool.ack_pending) + (t.pool.redelivered ? " (" + t.pool.redelivered + " redelivered)" : "") }));
      row("Idle pulls", String(t.pool.waiting));
    } else {
      row("Pool", t.pool_error ? "unreadable: " + t.pool_error : "no worker pool has bound this tool");
    }
    const workers = el("ul", { class: "workers" });
    for (const w of t.workers || []) workers.append(el("li", { class: "mono" }, w.id, " ", el("span", { class: "muted" }, "seen ", when(w.last_seen), ", " + w.answered + " answered")));
    if (!(t.workers || []).length) workers.append(el("li", { class: "muted", text: "none seen in the last minutes" }));
    const schema = (label, s) => {
      if (s === undefined || s === null) return null;
      const key = t.name + "/" + label;
      return el("details", { data: { key }, open: open.has(key) }, el("summary", { text: label }), el("pre", { text: JSON.stringify(s, null, 2) }));
    };
    return el("div", { class: "card tool", data: { tool: t.name } },
      el("h2", { class: "mono", text: t.name }),
      t.description ? el("p", { text: t.description }) : null,
      kv,
      el("h3", { text: "Workers" }), workers,
      schema("Input schema", t.input_schema), schema("Output schema", t.output_schema),
      el("p", { class: "muted mono", title: "definition digest", text: "digest " + String(t.digest).slice(0, 16) }));
  }

  // ---- traces -----------------------------------------------------------

  // traceLink shows a session's trace: a link to the host's trace viewer
  // when it named one (an http or https URL of the host's own
  // configuration, never a script's), else the id as text.
  function traceLink(id, url) {
    if (url && /^https?:\/\//.test(url)) {
      const a = document.createElement("a");
      a.setAttribute("href", url);
      a.setAttribute("target", "_blank");
      a.setAttribute("rel", "noopener noreferrer");
      a.id = "session-trace";
      a.className = "mono";
      a.textContent = id;
      return a;
    }
    return el("span", { class: "mono", id: "session-trace", text: id });
  }

  // ---- timeline -----------------------------------------------------------

  const SVG = "http://www.w3.org/2000/svg";

  function svg(tag, attrs, title) {
    const n = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "data") for (const [dk, dv] of Object.entries(v)) n.dataset[dk] = String(dv);
      else n.setAttribute(k, String(v));
    }
    if (title) {
      const t = document.createElementNS(SVG, "title");
      t.textContent = title;
      n.append(t);
    }
    return n;
  }

  const ms = (iso) => (iso ? Date.parse(iso) : NaN);

  function dur(msec) {
    if (!isFinite(msec)) return "";
    if (msec < 1000) return Math.round(msec) + "ms";
    if (msec < 60000) return (msec / 1000).toFixed(msec < 10000 ? 2 : 1) + "s";
    return Math.floor(msec / 60000) + "m " + Math.round((msec % 60000) / 1000) + "s";
  }

  // drawTimeline draws a session's operations as rows on one time axis,
  // from the session's creation to its end (or now): per operation, the
  // wait before its first publish, each attempt (in its tool's stream
  // until a worker is first heard of, then running), the backoff between
  // attempts, its chunks, retries and cancellation requests, and its end.
  function drawTimeline(box, tl) {
    clear(box);
    const ops = tl.operations || [];
    if (!ops.length) {
      box.append(el("p", { class: "muted", text: tl.recorded ? "No external operations." : "This host kept no timeline of this session (it ran in another process, or long ago)." }));
      return;
    }
    const now = Date.now();
    const t0 = ms(tl.created);
    let t1 = tl.ended ? ms(tl.ended) : now;
    for (const o of ops) for (const a of o.attempts) t1 = Math.max(t1, ms(a.ended) || 0, ms(a.first_frame) || 0);
    const span = Math.max(t1 - t0, 1);
    const shown = ops.slice(0, 100);
    const LABEL = 170, ROW = 24, TOP = 22, width = Math.max(box.clientWidth - 24, 480);
    const plot = width - LABEL - 10;
    const x = (t) => LABEL + Math.max(0, Math.min(1, (t - t0) / span)) * plot;
    const height = TOP + shown.length * ROW + 8;
    const root = svg("svg", { width, height, viewBox: "0 0 " + width + " " + height, class: "tl", role: "img", "aria-label": "timeline of the session's operations" });
    // The axis: five ticks, seconds from the session's creation.
    for (let i = 0; i <= 4; i++) {
      const tx = LABEL + (plot * i) / 4;
      root.append(svg("line", { x1: tx, x2: tx, y1: TOP - 4, y2: height - 4, class: "tl-grid" }));
      const label = svg("text", { x: tx, y: 12, class: "tl-axis", "text-anchor": i === 0 ? "start" : i === 4 ? "end" : "middle" });
      label.textContent = "+" + dur((span * i) / 4);
      root.append(label);
    }
    shown.forEach((o, i) => {
      const y = TOP + i * ROW;
      const g = svg("g", { class: "tl-op", data: { op: o.id, outcome: o.outcome || "live" } });
      const name = svg("text", { x: 4, y: y + 15, class: "tl-label" });
      name.textContent = o.id + " " + o.tool;
      g.append(name);
      const end = ms(o.ended) || now;
      g.append(svg("line", { x1: x(ms(o.claimed)), x2: x(end), y1: y + 11, y2: y + 11, class: "tl-life" }));
      const firstPub = o.attempts.length && ms(o.attempts[0].published);
      if (firstPub) {
        g.append(svg("rect", { x: x(ms(o.claimed)), y: y + 6, width: Math.max(x(firstPub) - x(ms(o.claimed)), 1), height: 10, class: "tl-queued", data: { phase: "queued" } },
          o.id + " queued on the host " + dur(firstPub - ms(o.claimed))));
      }
      o.attempts.forEach((a, k) => {
        const pub = ms(a.published), first = ms(a.first_frame), stop = ms(a.ended) || (o.ended ? end : now);
        if (pub) {
          const until = first || stop;
          g.append(svg("rect", { x: x(pub), y: y + 4, width: Math.max(x(until) - x(pub), 1), height: 14, class: "tl-waiting", data: { attempt: a.attempt, phase: "waiting" } },
            "attempt " + a.attempt + ": dispatched, no word from a worker for " + dur(until - pub)));
        }
        if (first) {
          g.append(svg("rect", { x: x(first), y: y + 4, width: Math.max(x(stop) - x(first), 1), height: 14, class: "tl-running " + (a.outcome || "live"), data: { attempt: a.attempt, phase: "running" } },
            "attempt " + a.attempt + (a.worker ? " on " + a.worker : "") + ": " + (a.outcome || "running") + ", " + dur(stop - first)));
        }
        const next = o.attempts[k + 1];
        if (next && ms(a.ended) && ms(next.published)) {
          g.append(svg("rect", { x: x(ms(a.ended)), y: y + 9, width: Math.max(x(ms(next.published)) - x(ms(a.ended)), 1), height: 4, class: "tl-backoff", data: { phase: "backoff" } },
            "retry backoff " + dur(ms(next.published) - ms(a.ended))));
        }
      });
      for (const m of o.marks || []) {
        const mx = x(ms(m.at));
        const what = m.kind.replace(/_/g, " ") + (m.bytes ? " (" + m.bytes + " bytes)" : "") + " at +" + dur(ms(m.at) - t0);
        if (m.kind === "chunk" || m.kind === "chunk_denied") {
          g.append(svg("line", { x1: mx, x2: mx, y1: y + 2, y2: y + 20, class: "tl-" + m.kind.replace("_", "-"), data: { mark: m.kind } }, what));
        } else {
          g.append(svg("circle", { cx: mx, cy: y + 11, r: 4, class: "tl-mark tl-" + m.kind.replace(/_/g, "-"), data: { mark: m.kind } }, what));
        }
      }
      if (o.ended) {
        g.append(svg("rect", { x: x(end) - 1, y: y + 2, width: 3, height: 18, class: "tl-end " + o.outcome, data: { mark: "end" } }, o.outcome + " at +" + dur(end - t0)));
      }
      root.append(g);
    });
    box.append(root);
    if (ops.length > shown.length || tl.operations_dropped) {
      box.append(el("p", { class: "muted", text: "Showing the first " + shown.length + " of " + (ops.length + (tl.operations_dropped || 0)) + " operations." }));
    }
    box.append(el("p", { class: "tl-legend muted" },
      el("span", { class: "key queued" }), "queued on the host ",
      el("span", { class: "key waiting" }), "dispatched, no word from a worker yet ",
      el("span", { class: "key running" }), "streaming (a worker heard from) ",
      el("span", { class: "key backoff" }), "retry backoff ",
      el("span", { class: "key chunk" }), "chunk ",
      el("span", { class: "key mark" }), "retry or cancel request"));
  }

  // ---- charts -------------------------------------------------------------

  // The host samples its own metrics every few seconds and keeps the last
  // minutes (GET /v1/metrics/tools); each tool gets three charts of them.
  const CHARTS = [
    { key: "rate", title: "Calls, retries and failures per second", labels: ["calls/s", "retries/s", "failures/s"],
      colors: ["#2457c5", "#9a6200", "#b3261e"], pick: (pt) => [pt.calls, pt.retries, pt.failures], unit: "" },
    { key: "latency", title: "Latency p50 and p99", labels: ["p50", "p99"],
      colors: ["#1e7b3a", "#7a3db8"], pick: (pt) => [pt.p50, pt.p99], unit: "s" },
    { key: "queue", title: "Queued and in flight", labels: ["queued", "in flight"],
      colors: ["#5b5b9a", "#2457c5"], pick: (pt) => [pt.queued, pt.in_flight], unit: "" },
  ];

  function fmt(v, unit) {
    if (v === null || v === undefined || !isFinite(v)) return "–";
    if (unit === "s") return dur(v * 1000);
    return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2).replace(/\.?0+$/, "") || "0";
  }

  function renderCharts(p) {
    const grid = el("div", { class: "charts", id: "charts" });
    const note = el("span", { class: "muted", id: "charts-note" });
    append(main, [el("h1", { text: "Charts" }), el("div", { class: "toolbar" }, note), grid]);
    const cards = new Map(); // tool -> {card, charts}
    if (typeof Dygraph !== "function") {
      grid.append(el("p", { class: "error", text: "The charting library did not load." }));
      return;
    }
    p.every(POLL_MS, async () => {
      const list = await call("GET", "/v1/metrics/tools", undefined, p.signal);
      if (!p.live) return;
      const tools = list.tools || [];
      note.textContent = "The host's own metrics, sampled every " + dur(list.interval_ms) + "; the last " +
        dur(Math.max(0, ...tools.map((t) => t.points.length)) * list.interval_ms) + " of them.";
      if (!tools.length) {
        if (!grid.querySelector(".muted")) grid.append(el("p", { class: "muted", text: "No tool has been called yet: the charts start with the first operation." }));
        return;
      }
      const empty = grid.querySelector("p.muted");
      if (empty) empty.remove();
      for (const t of tools) {
        let c = cards.get(t.tool);
        if (!c) {
          c = { charts: [] };
          const card = el("div", { class: "card chart-card", data: { tool: t.tool } }, el("h2", { class: "mono", text: t.tool }));
          for (const spec of CHARTS) {
            const now = el("span", { class: "chart-now" });
            const plot = el("div", { class: "chart-plot" });
            const box = el("div", { class: "chart", data: { chart: spec.key, rows: 0 } },
              el("div", { class: "chart-head" }, el("span", { text: spec.title }), now), plot);
            card.append(box);
            c.charts.push({ spec, box, plot, now, g: null });
          }
          grid.append(card);
          cards.set(t.tool, c);
        }
        for (const ch of c.charts) {
          const rows = t.points.map((pt) => [new Date(pt.t), ...ch.spec.pick(pt).map((v) => (v === null || v === undefined ? null : v))]);
          ch.box.dataset.rows = String(rows.length);
          ch.box.dataset.max = String(Math.max(0, ...rows.flatMap((r) => r.slice(1).filter((v) => v !== null))));
          const last = t.points.length ? ch.spec.pick(t.points[t.points.length - 1]) : [];
          clear(ch.now);
          ch.spec.labels.forEach((label, i) => {
            ch.now.append(el("span", { class: "chart-key" }, el("span", { class: "swatch s" + i + " " + ch.spec.key }), label + " " + fmt(last[i], ch.spec.unit)));
          });
          if (rows.length < 2) continue;
          const opts = {
            labels: ["time", ...ch.spec.labels], colors: ch.spec.colors, legend: "never", strokeWidth: 1.6,
            includeZero: true, drawGrid: true, gridLineColor: "#e4e4e4", axisLabelFontSize: 11, yAxisLabelWidth: 44,
            connectSeparatedPoints: false, animatedZooms: false, showLabelsOnHighlight: false,
            axes: {
              x: { axisLabelFormatter: (d) => (d instanceof Date ? d : new Date(d)).toTimeString().slice(0, 8), pixelsPerLabel: 70 },
              y: { valueFormatter: (v) => fmt(v, ch.spec.unit), axisLabelFormatter: (v) => fmt(v, ch.spec.unit) },
            },
          };
          if (!ch.g) ch.g = new Dygraph(ch.plot, rows, opts);
          else ch.g.updateOptions({ file: rows });
        }
      }
    });
  }

  // ---- run --------------------------------------------------------------

  function renderRun(p) {
    const src = el("textarea", { id: "run-source", spellcheck: "false",
      placeholder: "return await tool.start(\"demo.upper\", \"hello\")" });
    const budget = el("input", { type: "number", id: "run-budget", min: "0", placeholder: "host default" });
    const pending = el("input", { type: "number", id: "run-pending", min: "0", placeholder: "host default" });
    const restart = el("select", { id: "run-restart" },
      el("option", { value: "", text: "the host's default" }),
      el("option", { value: "resume", text: "resume it from its ledger" }),
      el("option", { value: "fail", text: "fail it" }));
    const msg = el("p", { class: "error", id: "run-error" });
    const submit = el("button", { class: "primary", type: "submit", id: "run-submit", text: "Run" });
    const form = el("form", { id: "run-form", on: { submit: async (ev) => {
      ev.preventDefault();
      msg.textContent = "";
      const body = { source: src.value };
      if (budget.value) body.tool_call_budget = Number(budget.value);
      if (pending.value) body.max_pending = Number(pending.value);
      if (restart.value) body.restart = restart.value;
      submit.disabled = true;
      try {
        const s = await call("POST", "/v1/sessions", body, p.signal);
        location.hash = "#/sessions/" + encodeURIComponent(s.id);
      } catch (e) {
        if (e instanceof APIError) msg.textContent = e.code + ": " + e.message;
        else if (e.name !== "AbortError" && !(e instanceof Unreachable)) msg.textContent = String(e.message);
      } finally {
        submit.disabled = false;
      }
    } } },
    el("label", { for: "run-source", text: "Script (JavaScript; top-level await works)" }), src,
    el("div", { class: "toolbar" },
      el("span", {}, el("label", { for: "run-budget", text: "Tool-call budget" }), budget),
      el("span", {}, el("label", { for: "run-pending", text: "Max pending" }), pending),
      el("span", {}, el("label", { for: "run-restart", text: "If its host stops" }), restart)),
    msg, submit);
    append(main, [el("h1", { text: "Run a script" }), el("div", { class: "card" }, form)]);
    src.focus();
  }

  // ---- start --------------------------------------------------------------

  logout.addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    loginMessage = "";
    route();
  });
  window.addEventListener("hashchange", route);
  setInterval(refreshTimes, 1000);
  route();
})();
