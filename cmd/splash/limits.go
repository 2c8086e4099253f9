package main

import (
	"fmt"

	"github.com/splashfabric/splashfabric/hostloop"
)

// hostLimits are the operator's bounds on one host, flags of both
// `splash host` and `splash dev`.
type hostLimits struct {
	limits          hostloop.Limits
	auditPerSession int
}

func (l *hostLimits) register(fs *flagSet) {
	fs.intVar(&l.limits.MaxSuspendedSessions, "max-sessions", "SPLASH_MAX_SESSIONS", hostloop.DefaultMaxSuspendedSessions,
		"`number` of suspended sessions the host holds at once; more are refused (429 host_busy)")
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
	switch {
	case l.limits.DefaultToolCallBudget > l.limits.MaxToolCallBudget:
		return fmt.Errorf("%w: --session-budget %d above --max-session-budget %d", errUsage, l.limits.DefaultToolCallBudget, l.limits.MaxToolCallBudget)
	case l.limits.DefaultMaxPending > l.limits.MaxPending:
		return fmt.Errorf("%w: --session-pending %d above --max-session-pending %d", errUsage, l.limits.DefaultMaxPending, l.limits.MaxPending)
	}
	return nil
}
