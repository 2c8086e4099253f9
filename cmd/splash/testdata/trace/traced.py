#!/usr/bin/env python3
"""A process tool for the tracing test: its first attempt asks to be
retried; its second streams two chunks, exports a span of its own under
the call's traceparent (OTLP/JSON to $OTLP_TRACES_URL, by hand: the
OpenTelemetry SDK is not on the machine), and waits to be cancelled."""
import json
import os
import secrets
import time
import urllib.request

import splash_tool


def export_span(traceparent, name, start, end):
    _, trace_id, parent_id, _ = traceparent.split("-")
    body = {"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "test-tool"}}]},
        "scopeSpans": [{"spans": [{
            "traceId": trace_id, "spanId": secrets.token_hex(8), "parentSpanId": parent_id,
            "name": name, "kind": 1,
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
        }]}],
    }]}
    req = urllib.request.Request(os.environ["OTLP_TRACES_URL"], data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).read()


def handle(call):
    if call.attempt == 1:
        raise splash_tool.Retryable("first attempt")
    start = time.time_ns()
    call.stream("chunk-text-never-traced 1")
    call.stream("chunk-text-never-traced 2")
    export_span(call.traceparent, "tool work", start, time.time_ns())
    if call.cancelled.wait(120):
        raise splash_tool.CancelAcknowledged()
    return "not cancelled"


splash_tool.serve(handle, cancellable=True)
