package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/splashfabric/splashfabric/apiclient"
)

var opsCommand = command{
	name:    "ops",
	summary: "list live operations: id, tool, state, attempt, worker, age",
	help: `
Prints a table of every live operation on the host at --api-url: its
session, operation id, request id, tool, state, attempt, the worker holding
it and how long since it entered its state. --watch redraws the table every
--interval until interrupted: in place on a terminal, as a new table after a
blank line otherwise. Cancel one with: splash cancel <session> <operation>.`,
	new: func() runner { return new(opsConfig) },
}

// opsConfig holds the flags of `splash ops`.
type opsConfig struct {
	api      apiClientFlags
	watch    bool
	interval time.Duration
}

func (c *opsConfig) flags(fs *flagSet) {
	c.api.register(fs)
	fs.boolVar(&c.watch, "watch", "SPLASH_OPS_WATCH", false, "keep refreshing the list until interrupted")
	fs.durationVar(&c.interval, "interval", "SPLASH_OPS_INTERVAL", time.Second, "refresh `period` with --watch")
}

func (c *opsConfig) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, args[0])
	}
	if c.interval <= 0 {
		return fmt.Errorf("%w: --interval %v, want more than 0", errUsage, c.interval)
	}
	client, err := c.api.client()
	if err != nil {
		return err
	}
	if !c.watch {
		ops, err := client.Operations(ctx)
		if err != nil {
			return c.api.explain(err)
		}
		return writeOpsTable(a.stdout, ops, time.Now())
	}
	return c.api.explain(c.watchOps(ctx, a, client))
}

// clearScreen moves the cursor home and clears the screen, so each frame
// of --watch replaces the last instead of scrolling.
const clearScreen = "\x1b[H\x1b[2J"

// watchOps draws a frame every interval until ctx ends, which is how
// --watch is meant to stop, so that is not an error. A failed fetch is
// shown in its frame and retried, since a host restarting should not end
// the watch; a refused token does, since waiting will not fix it.
func (c *opsConfig) watchOps(ctx context.Context, a *app, client *apiclient.Client) error {
	tty := isTerminal(a.stdout)
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for frame := 0; ; frame++ {
		ops, err := client.Operations(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, apiclient.ErrUnauthorized) {
			return err
		}
		// A frame is built whole and written at once, so a terminal
		// never shows half a table.
		var buf bytes.Buffer
		now := time.Now()
		switch {
		case tty:
			buf.WriteString(clearScreen)
			fmt.Fprintf(&buf, "splash ops: %s every %v, %s\n\n", client.BaseURL(), c.interval, now.Format(time.TimeOnly))
		case frame > 0:
			buf.WriteString("\n")
		}
		if err != nil {
			fmt.Fprintf(&buf, "error: %v\n", c.api.explain(err))
		} else if err := writeOpsTable(&buf, ops, now); err != nil {
			return err
		}
		if _, err := a.stdout.Write(buf.Bytes()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// writeOpsTable prints operations aligned in columns; an empty list says
// so rather than printing a lone header.
func writeOpsTable(w io.Writer, ops []apiclient.Operation, now time.Time) error {
	if len(ops) == 0 {
		_, err := fmt.Fprintln(w, "no live operations")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tOPERATION\tREQUEST\tTOOL\tSTATE\tATTEMPT\tWORKER\tAGE")
	for _, o := range ops {
		worker := o.Worker
		if worker == "" {
			worker = "-"
		}
		state := o.State
		if o.CancelDisposition != "" {
			state += " (" + o.CancelDisposition + ")"
		}
		age := "-"
		if !o.Since.IsZero() {
			age = formatElapsed(now.Sub(o.Since))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			o.Session, o.ID, o.RequestID, o.Tool, state, strconv.FormatUint(uint64(o.Attempt), 10), worker, age)
	}
	return tw.Flush()
}
