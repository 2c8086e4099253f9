package main

import (
	"context"
	"fmt"
)

var reconcileCommand = command{
	name:    "reconcile",
	args:    "<session>",
	summary: "ask the workers now what became of a session's live operations",
	help: `
Asks the host at --api-url to reconcile every live operation of a session
now: the host asks each tool's workers what became of the operation (from
their journals) and applies the answer as it would at the reconciliation it
makes on its own when a call has gone without an answer for a while. An
operation no worker knows of, once its invocation can no longer be
delivered, is dispatched again if its tool is idempotent and ends
indeterminate otherwise, so no effect runs twice.`,
	new: func() runner { return new(reconcileConfig) },
}

// reconcileConfig holds the flags of `splash reconcile`.
type reconcileConfig struct{ api apiClientFlags }

func (c *reconcileConfig) flags(fs *flagSet) { c.api.register(fs) }

func (c *reconcileConfig) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: want <session>, got %d arguments", errUsage, len(args))
	}
	client, err := c.api.client()
	if err != nil {
		return err
	}
	resp, err := client.ReconcileSession(ctx, args[0])
	if err != nil {
		return c.api.explain(err)
	}
	fmt.Fprintf(a.stdout, "session %s: the workers are asked about %d operations\n", resp.Session, resp.Operations)
	return nil
}
