package main

import (
	"context"
	"fmt"
)

var runCommand = command{
	name:    "run",
	args:    "<script.js> | -e <source>",
	summary: "submit a script to a host and stream its output",
	help: `
Submits the script in the file, or the source given with -e, to the host at
--api-url, prints its chunks as they arrive and then its result. Exits 0 only
when the script completed successfully. --json prints one JSON object per
event instead of plain lines.`,
	new: func() runner { return new(runConfig) },
}

// runConfig holds the flags of `splash run`.
type runConfig struct {
	api    apiClientFlags
	source string
	json   bool
}

func (c *runConfig) flags(fs *flagSet) {
	c.api.register(fs)
	fs.stringVar(&c.source, "e", "SPLASH_RUN_SOURCE", "", "script `source` to run instead of a file")
	fs.boolVar(&c.json, "json", "SPLASH_RUN_JSON", false, "print events as JSON lines")
}

// script returns the source to submit: -e or the one file argument, never
// both, so an ambiguous command line is refused rather than guessed.
func (c *runConfig) script(args []string) (source, path string, err error) {
	switch {
	case c.source != "" && len(args) > 0:
		return "", "", fmt.Errorf("%w: give a script file or -e, not both", errUsage)
	case c.source != "":
		return c.source, "", nil
	case len(args) == 1:
		return "", args[0], nil
	case len(args) == 0:
		return "", "", fmt.Errorf("%w: no script: give a file or -e 'source'", errUsage)
	default:
		return "", "", fmt.Errorf("%w: one script file at a time, got %d", errUsage, len(args))
	}
}

func (c *runConfig) run(_ context.Context, _ *app, args []string) error {
	if _, _, err := c.script(args); err != nil {
		return err
	}
	return errNotYetAvailable
}
