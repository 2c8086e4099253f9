// Package splashtooltest drives a tool from the worker's side, for tests:
// Host seals invokes and cancels as the worker does and opens what the tool
// answers, over any pair of pipes; StartProcess starts a tool process the
// way the worker does (key on descriptor 3, session and name in the
// environment) and connects a Host to it.
//
// It checks what the protocol package checks (tags, sequence, shape) and
// nothing more; the order of answers is the test's to assert.
//
//	p, err := splashtooltest.StartProcess(exec.Command("python3", "tool.py"), "s1", "text.upper", key)
//	defer p.Stop()
//	err = p.Send(protocol.InvokeMessage(protocol.Invoke{...}))
//	msg, err := p.Next(ctx) // chunk, result, cancel_disposition
package splashtooltest
