#!/usr/bin/env python3
"""Streams its input back as one chunk, then answers it: a tool whose
every output is whatever the script sent, for the console's escaping
tests."""
import splash_tool


def handle(call):
    call.stream(call.input)
    return call.input


splash_tool.serve(handle)
