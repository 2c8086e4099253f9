package main

import (
	"context"
	"fmt"
)

var cancelCommand = command{
	name:    "cancel",
	args:    "<session> <operation> | --session <session> [--force]",
	summary: "cancel one operation of a session, or the whole session",
	help: `
Asks the host at --api-url to cancel an operation, named by its session and
its id ("op-3" or "3") as splash ops lists them. Cancellation is two-phase:
the command returns once the worker has been asked; the operation ends when
the worker acknowledges or its result wins the race, which splash ops or the
script's splash run shows. An operation already finished or already being
cancelled is an error, with the host's reason.

With --session, the whole session is ended: every live operation is
cancelled two-phase, nothing the script starts afterwards is dispatched, and
the session ends cancelled once its workers acknowledged (or their results
won). Its slot and its ledger are released then. --force asserts every live
operation cancelled at once, without waiting for its worker, each recorded in
the audit: for a session stuck behind a tool that cannot be cancelled or a
worker that is gone; an effect already under way may still happen. Workers
are still sent the cancellations, so they stop what they can and skip what
they have not picked up.`,
	new: func() runner { return new(cancelConfig) },
}

// cancelConfig holds the flags of `splash cancel`.
type cancelConfig struct {
	api     apiClientFlags
	session string
	force   bool
}

func (c *cancelConfig) flags(fs *flagSet) {
	c.api.register(fs)
	fs.stringVar(&c.session, "session", "SPLASH_CANCEL_SESSION", "", "end this whole `session` instead of one operation")
	fs.boolVar(&c.force, "force", "SPLASH_CANCEL_FORCE", false, "with --session, assert its operations cancelled without their workers")
}

func (c *cancelConfig) run(ctx context.Context, a *app, args []string) error {
	switch {
	case c.session != "" && len(args) != 0:
		return fmt.Errorf("%w: --session takes no arguments, got %d", errUsage, len(args))
	case c.session == "" && c.force:
		return fmt.Errorf("%w: --force goes with --session", errUsage)
	case c.session == "" && len(args) != 2:
		return fmt.Errorf("%w: want <session> <operation>, got %d arguments", errUsage, len(args))
	}
	client, err := c.api.client()
	if err != nil {
		return err
	}
	if c.session != "" {
		resp, err := client.CancelSession(ctx, c.session, c.force)
		if err != nil {
			return c.api.explain(err)
		}
		if resp.State == "cancelled" {
			fmt.Fprintf(a.stdout, "session %s cancelled\n", resp.ID)
			return nil
		}
		fmt.Fprintf(a.stdout, "session %s is being cancelled: %d operations asked to stop\n", resp.ID, len(resp.Operations))
		return nil
	}
	resp, err := client.Cancel(ctx, args[0], args[1])
	if err != nil {
		return c.api.explain(err)
	}
	fmt.Fprintf(a.stdout, "cancellation requested: session %s operation %s\n", resp.Session, resp.Operation)
	return nil
}
