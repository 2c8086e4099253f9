package main

import (
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/workflow"
)

// hostLimits are the operator's bounds on one host, flags of both
// `splash host` and `splash dev`.
type hostLimits struct {
	limits          hostloop.Limits
	auditPerSession int
	// sessionMemory and memoryLimit are sizes as given; check reads
	// sessionMemory into limits, applyMemoryLimit reads memoryLimit.
	sessionMemory, memoryLimit string
	// restart is the sessions' default restart policy, as given.
	restart string
	// lease is how long the host's lease on its sessions lasts unrenewed.
	lease time.Duration
	// memoryBudget is what --memory-limit resolved to (0: none), set by
	// applyMemoryLimit: the loop's process budget.
	memoryBudget int64
}

func (l *hostLimits) register(fs *flagSet) {
	fs.intVar(&l.limits.MaxSuspendedSessions, "max-sessions", "SPLASH_MAX_SESSIONS", hostloop.DefaultMaxSuspendedSessions,
		"`number` of suspended sessions the host holds at once; more are refused (429 host_busy)")
	fs.intVar(&l.limits.MaxSessionsPerOwner, "max-sessions-per-owner", "SPLASH_MAX_SESSIONS_PER_OWNER", 0,
		"`number` of suspended sessions one token owner holds at once; more are refused (429 session_quota); 0: a quarter of --max-sessions, at least 64")
	fs.intVar(&l.limits.DefaultToolCallBudget, "session-budget", "SPLASH_SESSION_BUDGET", hostloop.DefaultSessionToolCallBudget,
		"tool call budget of a session that asks for none (`calls`)")
	fs.intVar(&l.limits.MaxToolCallBudget, "max-session-budget", "SPLASH_MAX_SESSION_BUDGET", hostloop.DefaultMaxSessionToolCallBudget,
		"most tool calls a session may ask for (`calls`)")
	fs.intVar(&l.limits.DefaultMaxPending, "session-pending", "SPLASH_SESSION_PENDING", hostloop.DefaultSessionMaxPending,
		"pending-operation limit of a session that asks for none (`operations`)")
	fs.intVar(&l.limits.MaxPending, "max-session-pending", "SPLASH_MAX_SESSION_PENDING", hostloop.DefaultMaxSessionPending,
		"most pending operations a session may ask for (`operations`)")
	fs.intVar(&l.auditPerSession, "audit-per-session", "SPLASH_AUDIT_PER_SESSION", hostloop.DefaultAuditPerSession,
		"audit events kept per session, the newest (`events`)")
	fs.stringVar(&l.sessionMemory, "session-memory", "SPLASH_SESSION_MEMORY", "256MiB",
		"memory a session's script may hold (`size`); over it the session fails (memory_budget)")
	fs.stringVar(&l.restart, "restart", "SPLASH_RESTART", string(workflow.RestartResume),
		"what a later process of this host does with a session this one leaves suspended, unless the submission says: resume (carry it on from its ledger) or fail")
	fs.durationVar(&l.lease, "host-lease", "SPLASH_HOST_LEASE", hostnats.DefaultHostLease,
		"how long the host's `duration` lease on its suspended sessions lasts unrenewed: after a kill, another host (or its next process) carries them on once it lapses")
	fs.stringVar(&l.memoryLimit, "memory-limit", "SPLASH_MEMORY_LIMIT", memoryLimitAuto,
		"the process's memory budget, its GOMEMLIMIT too: a `size`, auto (80% of the cgroup's or the machine's memory, or half of RLIMIT_AS, whichever is least; GOMEMLIMIT if set) or off. Near it new submissions are refused (503 memory_pressure) and the session holding the most memory fails (memory_budget)")
}

// applyMemoryLimit sets the process's soft memory limit from
// --memory-limit, and makes it the host loop's process budget.
func (l *hostLimits) applyMemoryLimit(a *app) error {
	m, err := resolveMemoryLimit(l.memoryLimit, a.lookupEnv)
	if err != nil {
		return err
	}
	m.apply(a.log)
	l.memoryBudget = m.budget()
	return nil
}

// check refuses bounds the loop would refuse, as a usage error naming the
// flag.
func (l *hostLimits) check() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"max-sessions", l.limits.MaxSuspendedSessions}, {"session-budget", l.limits.DefaultToolCallBudget},
		{"max-session-budget", l.limits.MaxToolCallBudget}, {"session-pending", l.limits.DefaultMaxPending},
		{"max-session-pending", l.limits.MaxPending}, {"audit-per-session", l.auditPerSession},
	} {
		if f.v < 1 {
			return fmt.Errorf("%w: --%s %d, want at least 1", errUsage, f.name, f.v)
		}
	}
	if l.limits.MaxSessionsPerOwner < 0 {
		return fmt.Errorf("%w: --max-sessions-per-owner %d, want 0 or more", errUsage, l.limits.MaxSessionsPerOwner)
	}
	if _, err := workflow.ParseRestartPolicy(l.restart); err != nil {
		return fmt.Errorf("%w: --restart %q: want resume or fail", errUsage, l.restart)
	}
	if l.lease == 0 {
		l.lease = hostnats.DefaultHostLease
	}
	if l.lease < time.Second {
		return fmt.Errorf("%w: --host-lease %v, want at least 1s", errUsage, l.lease)
	}
	n, err := parseBytes(l.sessionMemory)
	if err != nil || n < 1<<20 {
		return fmt.Errorf("%w: --session-memory %q: want a size of at least 1MiB", errUsage, l.sessionMemory)
	}
	l.limits.SessionMemoryBudget = n
	switch {
	case l.limits.DefaultToolCallBudget > l.limits.MaxToolCallBudget:
		return fmt.Errorf("%w: --session-budget %d above --max-session-budget %d", errUsage, l.limits.DefaultToolCallBudget, l.limits.MaxToolCallBudget)
	case l.limits.DefaultMaxPending > l.limits.MaxPending:
		return fmt.Errorf("%w: --session-pending %d above --max-session-pending %d", errUsage, l.limits.DefaultMaxPending, l.limits.MaxPending)
	}
	return nil
}
