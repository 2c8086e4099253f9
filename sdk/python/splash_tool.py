"""The tool side of the Splash process-tool protocol (docs/process-tools.md).

A tool gives serve() a handler and never sees a frame:

    import splash_tool

    def handle(call):
        call.stream("working on " + call.input)
        if call.cancelled.wait(0.2):
            raise splash_tool.CancelAcknowledged()
        return call.input.upper()

    splash_tool.serve(handle, cancellable=True)

Each call runs its handler in a thread of its own. The return value is the
result: a str for a text call, any JSON-serialisable value for a JSON call.
Raise Retryable, RateLimited, Permanent or Indeterminate to fail; any other
exception is a transient failure, except MemoryError, which is permanent:
a retry under the same memory limit fails the same way. With
cancellable=True a cancel sets call.cancelled; raise CancelAcknowledged
once the call has stopped. A call that has not ended within the worker's
cancel grace (10 s unless the catalog says cancel_grace) is stopped with
its process, whether or not the tool is cancellable.

The session fails closed: a frame that does not authenticate, is out of
sequence or belongs to another session ends the process with status 1 and a
line on stderr, without answering it. Stdlib only.
"""

import hashlib
import hmac
import json
import math
import os
import re
import struct
import sys
import threading
import time

__all__ = ["serve", "Call", "ToolError", "Retryable", "RateLimited", "Permanent", "Indeterminate",
           "CancelAcknowledged", "StreamClosed"]

MAX_LINE = 1 << 20  # bytes in a frame line, not counting its newline
_DOMAIN = b"splash-frame-v1\x00"
_HOST, _WORKER = 1, 2  # role bytes in the tag's input
# The one layout the host writes. msg is greedy up to the tag, which has a
# fixed length, so a "tag" inside msg cannot end it early; the session id
# is a JSON string, which cannot hold an unescaped quote, so ',"msg":' is
# found where it really starts.
_LINE = re.compile(rb'\{"session_id":("(?:[^"\\]|\\.)*"),"role":"([a-z]*)","seq":([1-9][0-9]{0,19}),'
                   rb'"msg":(\{.*\}),"tag":"([0-9a-f]{64})"\}')


class ToolError(Exception):
    """Base of the failures a handler raises on purpose."""


class Retryable(ToolError):
    """A transient failure: the host may retry under the same idempotency key."""


class RateLimited(ToolError):
    """A rate-limit rejection: no retry before `seconds` have passed."""

    def __init__(self, seconds, message="rate limited"):
        super().__init__(message)
        self.seconds = seconds


class Permanent(ToolError):
    """A failure no retry can fix."""


class Indeterminate(ToolError):
    """The tool cannot tell whether its effect happened."""


class CancelAcknowledged(Exception):
    """Raised by a handler that stopped after call.cancelled was set."""


class StreamClosed(Exception):
    """call.stream() after the call was answered."""


class _Violation(Exception):
    """A frame the tool must not act on; the session stops."""


class Call:
    """One invoke, as the handler sees it. Attributes are read-only by
    convention; call.cancelled is a threading.Event set by a cancel."""

    def __init__(self, session, inv):
        payload = inv["input"]
        self.request_id = inv["request_id"]
        self.tool = inv["tool"]
        self.format = payload["format"]
        self.input = payload.get("text", "") if self.format == "text" else payload["json"]
        self.call_index = inv.get("call_index", 0)
        self.attempt = inv["attempt"]
        self.attempt_limit = inv["attempt_limit"]
        self.idempotency_key = inv["idempotency_key"]
        # The W3C trace context of the worker's span for this call ("" when
        # the worker does not trace): a tool's own spans start under it, e.g.
        # opentelemetry.propagate.extract({"traceparent": call.traceparent}).
        # It is for tracing only and says nothing about who called.
        self.traceparent = inv.get("traceparent", "")
        self.tracestate = inv.get("tracestate", "")
        ms = inv.get("deadline_millis", 0)
        self.deadline = time.time() + ms / 1000 if ms else None
        self.cancelled = threading.Event()
        self._session = session
        # Guarded by the session lock.
        self._chunks = 0
        self._cancel_seen = False  # the host sent its one cancel
        self._cancel_asked = False  # ... and the handler was asked to stop
        self._done = False  # the terminal frame is written

    def stream(self, text):
        """Send one progress chunk; StreamClosed once the call was answered."""
        self._session.stream(self, str(text))


class _Session:
    def __init__(self, handler, cancellable, key, session_id, out):
        self._handler, self._cancellable, self._key = handler, cancellable, key
        self._sid, self._out = session_id, out
        self._sid_bytes = session_id.encode("utf-8")
        self._opened = 0  # reader thread only
        self._threads = []  # reader thread only
        # One lock for sealing + writing (sequence order is write order) and
        # for the call table, so "still running?" and "write its result" are
        # one step: a cancel finds the call running or its result written.
        self._lock = threading.Lock()
        self._sent = 0
        self._calls = {}

    def _tag(self, role, seq, msg):
        mac = hmac.new(self._key, digestmod=hashlib.sha256)
        mac.update(_DOMAIN + struct.pack(">I", len(self._sid_bytes)) + self._sid_bytes +
                   struct.pack(">BQI", role, seq, len(msg)))
        mac.update(msg)
        return mac.hexdigest()

    # --- inbound -------------------------------------------------------

    def run(self, stdin):
        while True:
            line = stdin.readline(MAX_LINE + 2)
            if not line:
                break
            try:
                self._receive(line[:-1] if line.endswith(b"\n") else line)
            except _Violation as e:
                self._fail(f"inbound frame {self._opened + 1}: {e}")
            except Exception as e:  # a bug here must not leave calls running unheard
                self._fail(f"reading frames: {type(e).__name__}: {e}")
        for t in self._threads:  # end of input: let running calls answer
            t.join()

    def _receive(self, line):
        if len(line) > MAX_LINE:
            raise _Violation(f"line over {MAX_LINE} bytes")
        m = _LINE.fullmatch(line)
        if not m:
            raise _Violation("not a frame line")
        sid, role, seq, body, tag = m.groups()
        try:
            sid = json.loads(sid)
        except ValueError:
            raise _Violation("bad session id") from None
        if sid != self._sid:
            raise _Violation(f"frame for session {sid!r}, this is {self._sid!r}")
        if role != b"host":
            raise _Violation(f"frame sealed by role {role.decode()!r}, want 'host'")
        seq = int(seq)
        if seq >= 1 << 64 or not hmac.compare_digest(self._tag(_HOST, seq, body), tag.decode()):
            raise _Violation("bad tag")
        if seq != self._opened + 1:
            raise _Violation(f"seq {seq}, want {self._opened + 1}")
        try:  # only now, authenticated, is the message decoded
            msg = json.loads(body)
            kind = msg["kind"]
            if set(msg) != {"kind", kind}:
                raise _Violation(f"message keys {sorted(msg)}")
            if kind == "invoke":
                self._invoke(msg["invoke"])
            elif kind == "cancel":
                self._cancel(msg["cancel"])
            else:
                raise _Violation(f"unexpected kind {kind!r}")
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise _Violation(f"invalid message: {type(e).__name__}: {e}") from None
        self._opened = seq

    def _invoke(self, inv):
        if not isinstance(inv.get("request_id"), str) or type(inv.get("attempt")) is not int \
                or inv["input"]["format"] not in ("text", "json"):
            raise _Violation("invalid invoke")
        call = Call(self, inv)
        with self._lock:
            if call.request_id in self._calls:
                raise _Violation(f"second invoke for running request {call.request_id!r}")
            self._calls[call.request_id] = call
        t = threading.Thread(target=self._call, args=(call,), name="splash-call-" + call.request_id)
        self._threads = [x for x in self._threads if x.is_alive()] + [t]
        t.start()

    def _cancel(self, c):
        rid, attempt = c["request_id"], c["attempt"]
        with self._lock:
            call = self._calls.get(rid)
            if call is None:  # already answered
                self._send(_disposition(rid, attempt, "too_late"))
            elif call._cancel_seen:
                raise _Violation(f"second cancel for request {rid!r}")
            elif not self._cancellable:
                call._cancel_seen = True
                self._send(_disposition(rid, call.attempt, "unsupported"))
            else:
                call._cancel_seen = call._cancel_asked = True
                call.cancelled.set()

    def _fail(self, why):
        # Taking the lock first means no frame is half written when the
        # process ends, and none follows the bad one.
        self._lock.acquire(timeout=5)
        _die(why)

    # --- outbound ------------------------------------------------------

    def _call(self, call):
        value, err = None, None
        try:
            value = self._handler(call)
        except BaseException as e:  # a handler's sys.exit() is a failure too
            err = e
        with self._lock:
            del self._calls[call.request_id]
            call._done = True
            if call._cancel_asked and isinstance(err, CancelAcknowledged):
                self._send(_disposition(call.request_id, call.attempt, "acknowledged"))
                return
            self._send({"kind": "result", "result": _result(call, value, err)})
            if call._cancel_asked:  # it did not stop: the result stands
                self._send(_disposition(call.request_id, call.attempt, "too_late"))

    def stream(self, call, text):
        with self._lock:
            if call._done:
                raise StreamClosed(f"request {call.request_id!r} already answered")
            call._chunks += 1
            self._send({"kind": "chunk", "chunk": {
                "request_id": call.request_id, "sequence": call._chunks, "text": text}})

    def _send(self, msg):
        """Seal and write one frame; the caller holds the lock."""
        body = json.dumps(msg, separators=(",", ":"), allow_nan=False).encode()
        seq = self._sent + 1
        line = b"".join([b'{"session_id":', json.dumps(self._sid).encode(), b',"role":"worker","seq":',
                         str(seq).encode(), b',"msg":', body, b',"tag":"',
                         self._tag(_WORKER, seq, body).encode(), b'"}\n'])
        try:
            self._out.write(line)
            self._out.flush()
        except OSError as e:  # the host stopped listening; nothing more to do
            _die(f"writing a frame: {e}")
        self._sent = seq


def _disposition(rid, attempt, disposition):
    return {"kind": "cancel_disposition", "cancel_disposition": {
        "request_id": rid, "attempt": attempt, "disposition": disposition}}


# Checked in order; anything else (any exception) is transient.
_STATUSES = [(Permanent, "failed"), (RateLimited, "retry_rate_limited"), (Indeterminate, "indeterminate")]


def _result(call, value, err):
    """Map a handler's answer to a result; optional fields are omitted,
    never null, since the host refuses null."""
    r = {"request_id": call.request_id, "attempt": call.attempt}
    if err is None:
        if call.format == "text" and not isinstance(value, str):
            err = Permanent(f"text tool returned {type(value).__name__}, want str")
        else:
            try:
                json.dumps(value, allow_nan=False)
                r.update(status="succeeded", payload={"format": call.format, call.format: value})
                return r
            except (TypeError, ValueError) as e:
                err = Permanent(f"result is not JSON: {e}")
    if isinstance(err, CancelAcknowledged):
        err = Permanent("cancellation acknowledged without a cancel")
    if isinstance(err, MemoryError):
        # The sandbox's memory limit, most likely: the same call would
        # only reach it again.
        err = Permanent("MemoryError: the tool ran out of memory")
    status = next((s for cls, s in _STATUSES if isinstance(err, cls)), "retry_transient")
    if isinstance(err, ToolError):
        r["error"] = str(err) or status
    else:
        r["error"] = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    r["status"] = status
    if status == "retry_rate_limited":
        # round first: 0.1 * 1000 is 100.00000000000001, not a reason to wait 101 ms
        r["retry_after_millis"] = max(0, math.ceil(round(err.seconds * 1000, 3)))
    return r


def _die(why):
    sys.stderr.write(f"splash_tool[{os.environ.get('SPLASH_TOOL_NAME', '?')}]: {why}\n")
    sys.stderr.flush()
    os._exit(1)


def _read_key():
    try:
        fd = int(os.environ["SPLASH_TOOL_KEY_FD"])
        with os.fdopen(fd, "rb") as f:
            data = f.read(2 * 64)
    except (KeyError, ValueError, OSError) as e:
        _die(f"no session key: {type(e).__name__}: {e}")
    if not re.fullmatch(rb"[0-9a-f]{64}\n", data):  # never echo it: it may be a key
        _die(f"session key: {len(data)} bytes, want 64 lowercase hex digits and a newline")
    return bytes.fromhex(data[:64].decode())


def serve(handler, *, cancellable=False):
    """Serve the session the worker started this process for, until stdin
    ends and every running call has answered. handler(call) runs once per
    invoke, each in its own thread. cancellable says whether handlers watch
    call.cancelled; if not, a cancel is answered "unsupported" at once, and
    the worker stops the process if the call runs past its cancel grace."""
    key = _read_key()
    session_id = os.environ.get("SPLASH_TOOL_SESSION", "")
    if not session_id:
        _die("SPLASH_TOOL_SESSION is not set")
    # stdout carries frames only: keep a private handle to it and send
    # print() and anything else written to fd 1 to stderr, the worker's log.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _Session(handler, cancellable, key, session_id, out).run(sys.stdin.buffer)
