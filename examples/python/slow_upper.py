#!/usr/bin/env python3
"""Upper-cases its input slowly: one progress chunk per word, 200 ms apart."""
import os
import splash_tool

# Where to record each answered call, one line per idempotency key, when
# set: the compose cluster's end-to-end audit counts them (an effect that
# ran twice would show twice).
EFFECTS = os.environ.get("SLOWUPPER_EFFECTS")


def handle(call):
    if call.input.startswith("flaky") and call.attempt == 1:
        raise splash_tool.Retryable("flaky input fails its first attempt")
    words = call.input.split()
    for i, word in enumerate(words, 1):
        call.stream(f"word {i}/{len(words)}: {word}")
        if call.cancelled.wait(0.2):  # sleep, but wake up for a cancel
            raise splash_tool.CancelAcknowledged()
    if EFFECTS:
        record(call.idempotency_key)
    return call.input.upper()


def record(key):
    """Append key to this process's effects file in one write, which the
    kernel does not interleave with another process's."""
    path = os.path.join(EFFECTS, f"{os.uname().nodename}-{os.getpid()}-{id(EFFECTS):x}.log")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (key + "\n").encode())
    finally:
        os.close(fd)


splash_tool.serve(handle, cancellable=True)
