"""A small MCP server over stdio, standard library only.

It offers two tools:

  upper {"text": ...}         upper-cases the text a word at a time,
                              reporting each word as progress; a
                              cancelled call stops and is not answered
  count_words {"text": ...}   answers {"words": n} as structured content

Splash runs it from a catalog entry with `mcp:` (catalog.yaml beside this
file; docs/mcp.md). It speaks just enough of the protocol for a client:
initialize, tools/list, tools/call, ping, notifications/cancelled.
"""

import json
import sys
import threading

SUPPORTED = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]

TOOLS = [
    {
        "name": "upper",
        "description": "upper-cases its text a word at a time",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
    {
        "name": "count_words",
        "description": "counts the words of its text",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"words": {"type": "integer"}},
            "required": ["words"],
        },
    },
]

write_lock = threading.Lock()
cancelled = {}  # request id -> threading.Event
cancelled_lock = threading.Lock()


def send(message):
    line = json.dumps(message, separators=(",", ":")) + "\n"
    with write_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def answer(request_id, result):
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def refuse(request_id, code, message):
    send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def text_result(text, structured=None, is_error=False):
    result = {"content": [{"type": "text", "text": text}]}
    if structured is not None:
        result["structuredContent"] = structured
    if is_error:
        result["isError"] = True
    return result


def call_tool(request_id, params, stop):
    name = params.get("name")
    args = params.get("arguments") or {}
    token = (params.get("_meta") or {}).get("progressToken")
    text = args.get("text")
    if not isinstance(text, str):
        answer(request_id, text_result("text must be a string", is_error=True))
        return
    if name == "count_words":
        n = len(text.split())
        answer(request_id, text_result(json.dumps({"words": n}), {"words": n}))
        return
    words = text.split()
    out = []
    for i, word in enumerate(words, 1):
        out.append(word.upper())
        if token is not None:
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                "progressToken": token, "progress": i, "total": len(words),
                "message": f"word {i}/{len(words)}: {word}"}})
        if stop.wait(0.2):  # sleep, but wake up for a cancellation
            return  # a cancelled request gets no answer
    answer(request_id, text_result(" ".join(out)))


def handle(message):
    method = message.get("method")
    request_id = message.get("id")
    params = message.get("params") or {}
    if method == "notifications/cancelled":
        with cancelled_lock:
            event = cancelled.get(params.get("requestId"))
        if event is not None:
            event.set()
        return
    if request_id is None:
        return  # other notifications need nothing
    if method == "initialize":
        version = params.get("protocolVersion")
        answer(request_id, {
            "protocolVersion": version if version in SUPPORTED else SUPPORTED[-1],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "text-server", "version": "1.0"},
        })
    elif method == "ping":
        answer(request_id, {})
    elif method == "tools/list":
        answer(request_id, {"tools": TOOLS})
    elif method == "tools/call":
        if params.get("name") not in ("upper", "count_words"):
            refuse(request_id, -32602, f"unknown tool {params.get('name')!r}")
            return
        stop = threading.Event()
        with cancelled_lock:
            cancelled[request_id] = stop

        def run():
            try:
                call_tool(request_id, params, stop)
            finally:
                with cancelled_lock:
                    cancelled.pop(request_id, None)

        threading.Thread(target=run, daemon=True).start()
    else:
        refuse(request_id, -32601, f"method {method!r} not found")


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict):
            handle(message)


if __name__ == "__main__":
    main()
