#!/usr/bin/env python3
"""Upper-cases its input slowly: one progress chunk per word, 200 ms apart."""
import splash_tool


def handle(call):
    if call.input.startswith("flaky") and call.attempt == 1:
        raise splash_tool.Retryable("flaky input fails its first attempt")
    words = call.input.split()
    for i, word in enumerate(words, 1):
        call.stream(f"word {i}/{len(words)}: {word}")
        if call.cancelled.wait(0.2):  # sleep, but wake up for a cancel
            raise splash_tool.CancelAcknowledged()
    return call.input.upper()


splash_tool.serve(handle, cancellable=True)
