package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// app is what a command may touch of the process: its output streams, its
// environment and the logger built from the common flags. Tests run commands
// in-process with their own app.
type app struct {
	stdout    io.Writer
	stderr    io.Writer
	lookupEnv func(string) (string, bool)
	log       *slog.Logger
}

// runner is one subcommand: it declares its flags into a flagSet and then
// runs with the positional arguments left over.
type runner interface {
	flags(fs *flagSet)
	run(ctx context.Context, a *app, args []string) error
}

// command describes a subcommand for the dispatcher and for usage.
type command struct {
	name    string
	args    string // positional arguments, as shown in usage
	summary string // one line, shown in the command list
	help    string // paragraphs shown by --help
	new     func() runner
}

// commands lists the subcommands in the order usage shows them.
func commands() []command {
	return []command{
		devCommand,
		natsCommand,
		certsCommand,
		hostCommand,
		workerCommand,
		runCommand,
		opsCommand,
		cancelCommand,
		reconcileCommand,
		toolsCommand,
		keysCommand,
		mcpCommand,
		benchCommand,
		healthcheckCommand,
		versionCommand,
	}
}

func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// run dispatches args to a subcommand and returns the exit status: 0 on
// success or --help, 2 for a usage error, 1 for any other failure.
func run(ctx context.Context, args []string, a *app) int {
	if len(args) == 0 {
		printUsage(a.stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) == 1 {
			printUsage(a.stdout)
			return 0
		}
		c, ok := findCommand(args[1])
		if !ok {
			fmt.Fprintf(a.stderr, "splash: unknown command %q\n\n", args[1])
			printUsage(a.stderr)
			return 2
		}
		c.printUsage(a.stdout, c.newFlagSet(c.new(), new(logFlags)))
		return 0
	}
	c, ok := findCommand(args[0])
	if !ok {
		fmt.Fprintf(a.stderr, "splash: unknown command %q\n\n", args[0])
		printUsage(a.stderr)
		return 2
	}
	return c.execute(ctx, args[1:], a)
}

func (c command) newFlagSet(r runner, lf *logFlags) *flagSet {
	fs := newFlagSet(c.name)
	r.flags(fs)
	lf.register(fs)
	return fs
}

func (c command) execute(ctx context.Context, args []string, a *app) int {
	r := c.new()
	var lf logFlags
	fs := c.newFlagSet(r, &lf)
	positional, err := fs.parse(args, a.lookupEnv)
	if errors.Is(err, flag.ErrHelp) {
		c.printUsage(a.stdout, fs)
		return 0
	}
	if err == nil {
		a.log, err = lf.logger(a.stderr)
	}
	if err == nil {
		err = r.run(ctx, a, positional)
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errCatalog):
		fmt.Fprintf(a.stderr, "splash %s: %s\n", c.name, strings.TrimPrefix(err.Error(), errCatalog.Error()+": "))
		return 2
	case errors.Is(err, errTokenFile):
		fmt.Fprintf(a.stderr, "splash %s: %v\n", c.name, err)
		return 2
	case errors.Is(err, errUsage):
		// The usage that follows says it is a usage error; the prefix
		// would only repeat it.
		fmt.Fprintf(a.stderr, "splash %s: %s\n\n", c.name, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		c.printUsage(a.stderr, fs)
		return 2
	default:
		fmt.Fprintf(a.stderr, "splash %s: %v\n", c.name, err)
		return 1
	}
}

func (c command) printUsage(w io.Writer, fs *flagSet) {
	fmt.Fprintf(w, "Usage: splash %s [flags]", c.name)
	if c.args != "" {
		fmt.Fprintf(w, " %s", c.args)
	}
	fmt.Fprintf(w, "\n\n%s\n", c.summary)
	if c.help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.help))
	}
	fmt.Fprintf(w, "\nFlags (a flag beats its environment variable, which beats the default):\n")
	fs.printDefaults(w)
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: splash <command> [flags] [arguments]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'splash <command> --help' for a command's flags and environment variables.\n")
}
