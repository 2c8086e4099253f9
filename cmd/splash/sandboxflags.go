package main

import (
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/toolproc"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// sandboxFlags are the worker's own settings for the tools it runs as
// child processes: `splash worker` and `splash dev`.
type sandboxFlags struct {
	maxRuntime time.Duration
	cgroup     string
}

func (f *sandboxFlags) register(fs *flagSet) {
	fs.durationVar(&f.maxRuntime, "tool-max-runtime", "SPLASH_TOOL_MAX_RUNTIME", toolproc.DefaultMaxRuntime,
		"longest a process tool's call without a deadline may run before its process is stopped and the call answered indeterminate")
	fs.stringVar(&f.cgroup, "tool-cgroup", "SPLASH_TOOL_CGROUP", "",
		"cgroup v2 `directory` delegated to the worker, for its sandboxes' memory and pids limits (empty: one the worker may use, else rlimits)")
}

func (f *sandboxFlags) check() error {
	if f.maxRuntime <= 0 {
		return fmt.Errorf("%w: --tool-max-runtime %v, want > 0", errUsage, f.maxRuntime)
	}
	return nil
}

// settings are the agent's process settings, protecting secrets (the
// worker's key and credential files, a data directory) and its home from
// every sandbox.
func (f *sandboxFlags) settings(secrets ...string) workeragent.ProcessSettings {
	return workeragent.ProcessSettings{
		MaxRuntime: f.maxRuntime,
		Cgroup:     f.cgroup,
		Protected:  protected(secrets...),
	}
}

// protected is the worker's home and the non-empty secrets.
func protected(secrets ...string) toolspec.Protected {
	p := toolspec.Protected{Home: toolspec.HomeDir()}
	for _, s := range secrets {
		if s != "" {
			p.Secrets = append(p.Secrets, s)
		}
	}
	return p
}
