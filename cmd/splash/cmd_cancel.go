package main

import (
	"context"
	"fmt"
)

var cancelCommand = command{
	name:    "cancel",
	args:    "<session> <operation>",
	summary: "cancel one operation of a session",
	help: `
Asks the host at --api-url to cancel an operation, named by its session and
its id ("op-3" or "3") as splash ops lists them. Cancellation is two-phase:
the command returns once the worker has been asked; the operation ends when
the worker acknowledges or its result wins the race, which splash ops or the
script's splash run shows. An operation already finished or already being
cancelled is an error, with the host's reason.`,
	new: func() runner { return new(cancelConfig) },
}

// cancelConfig holds the flags of `splash cancel`.
type cancelConfig struct {
	api apiClientFlags
}

func (c *cancelConfig) flags(fs *flagSet) { c.api.register(fs) }

func (c *cancelConfig) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("%w: want <session> <operation>, got %d arguments", errUsage, len(args))
	}
	client, err := c.api.client()
	if err != nil {
		return err
	}
	resp, err := client.Cancel(ctx, args[0], args[1])
	if err != nil {
		return c.api.explain(err)
	}
	fmt.Fprintf(a.stdout, "cancellation requested: session %s operation %s\n", resp.Session, resp.Operation)
	return nil
}
