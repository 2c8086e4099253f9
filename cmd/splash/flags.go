package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Environment variables shared by every command that has the flag; a
// command-specific flag takes SPLASH_<COMMAND>_<FLAG> instead, so one
// variable never means two things.
const (
	envNatsURL      = "SPLASH_NATS_URL"
	envNatsUser     = "SPLASH_NATS_USER"
	envNatsPassword = "SPLASH_NATS_PASSWORD"
	envKeyFile      = "SPLASH_KEY_FILE"
	envPoolKeys     = "SPLASH_POOL_KEYS"
	envPool         = "SPLASH_POOL"
	envAPIToken     = "SPLASH_API_TOKEN"
	envAPITokens    = "SPLASH_API_TOKENS_FILE"
	envAPIAddr      = "SPLASH_API_ADDR"
	envAPIURL       = "SPLASH_API_URL"
	envMetricsAddr  = "SPLASH_METRICS_ADDR"
	envHostID       = "SPLASH_HOST_ID"
	envWorkerID     = "SPLASH_WORKER_ID"
	envTools        = "SPLASH_TOOLS"
	envLogFormat    = "SPLASH_LOG_FORMAT"
	envLogLevel     = "SPLASH_LOG_LEVEL"
	envDataDir      = "SPLASH_DATA_DIR"
)

// Defaults shared by the commands that talk to one another, so that `splash
// host` and `splash run` meet without flags.
const (
	defaultNatsURL = "nats://127.0.0.1:4222"
	defaultAPIAddr = "127.0.0.1:8080"
	defaultAPIURL  = "http://127.0.0.1:8080"
)

// flagSet is a flag.FlagSet in which every flag also has an environment
// variable. The precedence is flag, then environment, then default: parse
// applies a variable only to flags the command line left alone.
type flagSet struct {
	fs  *flag.FlagSet
	env map[string]string // flag name → environment variable
	set map[string]bool   // flags given on the command line or by environment
}

func newFlagSet(name string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// Errors and usage are printed by run, once, where it chooses.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{fs: fs, env: map[string]string{}, set: map[string]bool{}}
}

func (f *flagSet) bind(name, env string) {
	if _, dup := f.env[name]; dup {
		panic("splash: flag defined twice: " + name)
	}
	f.env[name] = env
}

func (f *flagSet) stringVar(p *string, name, env, value, usage string) {
	f.fs.StringVar(p, name, value, usage)
	f.bind(name, env)
}

func (f *flagSet) boolVar(p *bool, name, env string, value bool, usage string) {
	f.fs.BoolVar(p, name, value, usage)
	f.bind(name, env)
}

func (f *flagSet) intVar(p *int, name, env string, value int, usage string) {
	f.fs.IntVar(p, name, value, usage)
	f.bind(name, env)
}

func (f *flagSet) float64Var(p *float64, name, env string, value float64, usage string) {
	f.fs.Float64Var(p, name, value, usage)
	f.bind(name, env)
}

func (f *flagSet) durationVar(p *time.Duration, name, env string, value time.Duration, usage string) {
	f.fs.DurationVar(p, name, value, usage)
	f.bind(name, env)
}

func (f *flagSet) listVar(p *[]string, name, env string, value []string, usage string) {
	*p = value
	f.fs.Var((*listValue)(p), name, usage)
	f.bind(name, env)
}

// isSet reports whether the flag came from the command line or the
// environment rather than its default; `splash nats --config` uses it to
// override only what the operator asked for.
func (f *flagSet) isSet(name string) bool { return f.set[name] }

// parse reads args, then fills the flags the command line did not set from
// lookupEnv. Flags and positional arguments may be interleaved (`splash run
// script.js --json`); everything after "--" is positional. It returns the
// positional arguments. Every error wraps errUsage, except flag.ErrHelp.
func (f *flagSet) parse(args []string, lookupEnv func(string) (string, bool)) ([]string, error) {
	var positional []string
	for {
		if err := f.fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		rest := f.fs.Args()
		if len(rest) == 0 {
			break
		}
		// Parse stops at "--" after consuming it, and at the first
		// non-flag otherwise; tell the two apart by what preceded rest.
		if consumed := args[:len(args)-len(rest)]; len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	f.fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	for _, name := range f.names() {
		env := f.env[name]
		if f.set[name] || env == "" {
			continue
		}
		v, ok := lookupEnv(env)
		if !ok || v == "" {
			continue
		}
		if err := f.fs.Set(name, v); err != nil {
			// The value is not echoed: SPLASH_API_TOKEN and its kin
			// are secrets.
			return nil, fmt.Errorf("%w: invalid value in %s for --%s: %v", errUsage, env, name, err)
		}
		f.set[name] = true
	}
	return positional, nil
}

func (f *flagSet) names() []string {
	names := make([]string, 0, len(f.env))
	for name := range f.env {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// printDefaults writes one entry per flag: its name and type, then its
// usage, default and environment variable.
func (f *flagSet) printDefaults(w io.Writer) {
	f.fs.VisitAll(func(fl *flag.Flag) {
		typ, usage := flag.UnquoteUsage(fl)
		if typ == "" {
			fmt.Fprintf(w, "  -%s%s\n", dashes(fl.Name), fl.Name)
		} else {
			fmt.Fprintf(w, "  -%s%s %s\n", dashes(fl.Name), fl.Name, typ)
		}
		var notes []string
		if fl.DefValue != "" && fl.DefValue != "false" && fl.DefValue != "0" {
			notes = append(notes, "default "+quoteDefault(fl))
		}
		if env := f.env[fl.Name]; env != "" {
			notes = append(notes, "env "+env)
		}
		fmt.Fprintf(w, "        %s", usage)
		if len(notes) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(notes, ", "))
		}
		fmt.Fprintln(w)
	})
}

// quoteDefault quotes string defaults, so an address or a path reads as
// one value, and leaves numbers, durations and booleans bare.
func quoteDefault(fl *flag.Flag) string {
	if g, ok := fl.Value.(flag.Getter); ok {
		if _, isString := g.Get().(string); isString {
			return fmt.Sprintf("%q", fl.DefValue)
		}
	}
	return fl.DefValue
}

// dashes gives long flags the double dash readers expect; the flag package
// accepts either form.
func dashes(name string) string {
	if len(name) > 1 {
		return "-"
	}
	return ""
}

// listValue is a comma-separated list flag. Setting it replaces the list,
// so an environment value or a later flag does not append to the default.
type listValue []string

func (l *listValue) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *listValue) Set(s string) error {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	*l = out
	return nil
}
