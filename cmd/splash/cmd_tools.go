package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/toolspec"
)

var toolsCommand = command{
	name:    "tools",
	args:    "apply <file> | ls | rm <name>",
	summary: "publish, list and remove the tool definitions on the fabric",
	help: `
Manages the tools published on the fabric (the splash_catalog bucket), which
hosts pick up without a restart:

  apply <file>  checks the catalog file (YAML or JSON, the format of package
                toolspec) and publishes every tool in it, adding it or
                replacing the definition of the same name, then prints each
                tool with its digest. A catalog with any fault is refused
                whole, naming the tool and the field, and nothing is
                published (exit 2). Tools the file leaves out stay published.
  ls            prints a table of the published tools: name, format, digest
                (its first 12 hex digits), whether a worker runs it as a
                process, description.
  rm <name>     removes one published tool; a name that is not published is
                an error.

Connects to NATS at --nats-url as a user that may write the bucket (ops in
deploy/nats/splash.conf; hosts may only read it). The first apply creates the
bucket with --replicas. --timeout bounds the whole command, connecting
included.`,
	new: func() runner { return new(toolsConfig) },
}

// toolsConfig holds the flags of `splash tools`.
type toolsConfig struct {
	nats     natsClientFlags
	replicas int
	timeout  time.Duration
}

func (c *toolsConfig) flags(fs *flagSet) {
	c.nats.register(fs)
	registerReplicas(fs, &c.replicas)
	fs.durationVar(&c.timeout, "timeout", "SPLASH_TOOLS_TIMEOUT", 30*time.Second, "give up after this `duration`, connecting included")
}

// digestHexShown is how much of a digest ls shows: enough to tell two
// definitions apart at a glance.
const digestHexShown = 12

// descriptionShown bounds the description column of ls, in runes.
const descriptionShown = 60

func (c *toolsConfig) run(ctx context.Context, a *app, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: want apply <file>, ls or rm <name>", errUsage)
	}
	verb, rest := args[0], args[1:]
	var do func(ctx context.Context, js jetstream.JetStream, cfg fabric.Config) error
	switch verb {
	case "apply":
		if len(rest) != 1 {
			return fmt.Errorf("%w: apply takes one catalog file, got %d arguments", errUsage, len(rest))
		}
		// The file is checked before anything connects: a bad
		// catalog is the operator's mistake, and publishes nothing.
		cat, err := toolspec.Load(rest[0])
		if err != nil {
			return fmt.Errorf("%w: %s: %v", errCatalog, rest[0], err)
		}
		do = func(ctx context.Context, js jetstream.JetStream, cfg fabric.Config) error {
			return applyTools(ctx, a.stdout, js, cfg, cat)
		}
	case "ls":
		if len(rest) != 0 {
			return fmt.Errorf("%w: ls takes no argument, got %q", errUsage, rest[0])
		}
		do = func(ctx context.Context, js jetstream.JetStream, cfg fabric.Config) error {
			return listTools(ctx, a.stdout, js, cfg)
		}
	case "rm":
		if len(rest) != 1 {
			return fmt.Errorf("%w: rm takes one tool name, got %d arguments", errUsage, len(rest))
		}
		do = func(ctx context.Context, js jetstream.JetStream, cfg fabric.Config) error {
			return removeTool(ctx, a.stdout, js, cfg, rest[0])
		}
	default:
		return fmt.Errorf("%w: unknown verb %q, want apply, ls or rm", errUsage, verb)
	}
	if c.timeout <= 0 {
		return fmt.Errorf("%w: --timeout %v, want more than 0", errUsage, c.timeout)
	}
	cfg, err := fabricConfig(c.replicas, 0)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return withJetStream(ctx, c.nats, "splash tools", a.log.With("component", "tools"), func(ctx context.Context, js jetstream.JetStream) error {
		return do(ctx, js, cfg)
	})
}

// applyTools publishes cat and prints each tool written with its digest.
func applyTools(ctx context.Context, w io.Writer, js jetstream.JetStream, cfg fabric.Config, cat *toolspec.Catalog) error {
	set, err := cat.Compile()
	if err != nil {
		return fmt.Errorf("%w: %v", errCatalog, err)
	}
	store, err := fabric.OpenCatalogStore(ctx, js, cfg, true)
	if err != nil {
		return err
	}
	applied, err := store.Apply(ctx, cat)
	for _, name := range applied {
		digest := "-"
		if t, ok := set.Lookup(name); ok {
			digest = t.Digest()
		}
		fmt.Fprintf(w, "applied %s %s\n", name, digest)
	}
	if errors.Is(err, toolspec.ErrInvalidCatalog) {
		return fmt.Errorf("%w: %v", errCatalog, err)
	}
	return err
}

// listTools prints the published tools as a table. A bucket nobody
// created yet holds no tools; ls does not create it.
func listTools(ctx context.Context, w io.Writer, js jetstream.JetStream, cfg fabric.Config) error {
	store, err := fabric.OpenCatalogStore(ctx, js, cfg, false)
	if errors.Is(err, fabric.ErrCatalogNotProvisioned) {
		_, err = fmt.Fprintln(w, "no published tools")
		return err
	}
	if err != nil {
		return err
	}
	specs, listErr := store.List(ctx)
	if err := writeToolsTable(w, specs); err != nil {
		return err
	}
	if listErr != nil {
		return fmt.Errorf("records that are not valid definitions (splash tools rm <key> removes one): %w", listErr)
	}
	return nil
}

// writeToolsTable prints specs aligned in columns; an empty list says so
// rather than printing a lone header.
func writeToolsTable(w io.Writer, specs []toolspec.Spec) error {
	if len(specs) == 0 {
		_, err := fmt.Fprintln(w, "no published tools")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tFORMAT\tDIGEST\tPROCESS\tDESCRIPTION")
	for _, s := range specs {
		format, digest := string(s.Format), "-"
		if t, err := s.Compile(); err == nil {
			format = string(t.Format())
			digest = shortDigest(t.Digest())
		}
		process := "no"
		switch {
		case s.Process != nil:
			process = "yes"
		case s.MCP != nil:
			process = "mcp"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, format, digest, process, oneLine(s.Description, descriptionShown))
	}
	return tw.Flush()
}

// shortDigest is the first hex digits of a "sha256:<hex>" digest.
func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > digestHexShown {
		d = d[:digestHexShown]
	}
	return d
}

// oneLine keeps a description's first line, control characters made
// spaces and cut to at most n runes, so a table row stays one line.
func oneLine(s string, n int) string {
	line, rest, _ := strings.Cut(s, "\n")
	line = strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, line))
	switch {
	case utf8.RuneCountInString(line) > n:
		line = string([]rune(line)[:n-1]) + "…"
	case strings.TrimSpace(rest) != "":
		line += " …"
	}
	if line == "" {
		return "-"
	}
	return line
}

// removeTool removes one published tool.
func removeTool(ctx context.Context, w io.Writer, js jetstream.JetStream, cfg fabric.Config, name string) error {
	store, err := fabric.OpenCatalogStore(ctx, js, cfg, false)
	if errors.Is(err, fabric.ErrCatalogNotProvisioned) {
		return fmt.Errorf("%w: %q (nothing is published yet)", fabric.ErrToolNotPublished, name)
	}
	if err != nil {
		return err
	}
	if err := store.Remove(ctx, name); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "removed %s\n", name)
	return err
}
