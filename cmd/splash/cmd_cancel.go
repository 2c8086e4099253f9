package main

import (
	"context"
	"fmt"
)

var cancelCommand = command{
	name:    "cancel",
	args:    "<session> <operation>",
	summary: "cancel one operation of a session",
	new:     func() runner { return new(cancelConfig) },
}

// cancelConfig holds the flags of `splash cancel`.
type cancelConfig struct {
	api apiClientFlags
}

func (c *cancelConfig) flags(fs *flagSet) { c.api.register(fs) }

func (c *cancelConfig) run(_ context.Context, _ *app, args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("%w: want <session> <operation>, got %d arguments", errUsage, len(args))
	}
	return errNotYetAvailable
}
