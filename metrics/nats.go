package metrics

import "github.com/prometheus/client_golang/prometheus"

// Operations a NATS server refuses (splash_nats_permission_denied_total,
// splash_nats_violations_total).
const (
	NATSPublish   = "publish"
	NATSSubscribe = "subscribe"
	// NATSReply: a publish whose reply subject its user may not receive on.
	NATSReply = "reply"
)

var natsOps = []string{NATSPublish, NATSSubscribe, NATSReply}

// NATS counts permission violations. A host or worker counts the refusals
// of its own connections (splash_nats_permission_denied_total: its
// configuration and its permissions disagree, or it was made to do what it
// may not); a NATS node (splash nats, the node of splash dev) counts the
// violations its clients commit, by the identity that committed them
// (splash_nats_violations_total: a misconfigured client, or a compromised
// pool probing). All methods are safe for concurrent use, and every method
// of a nil *NATS does nothing.
type NATS struct {
	set
	denied     *prometheus.CounterVec
	violations *prometheus.CounterVec
}

// NewNATS builds the set and registers it with reg (nil registers
// nothing); a second registration into the same registry returns the
// first.
func NewNATS(reg prometheus.Registerer, opts ...Option) *NATS {
	o := buildOptions(opts)
	b := builder{constLabels: o.constLabels}
	n := &NATS{
		denied: b.counter("splash_nats_permission_denied_total",
			"Publishes and subscriptions of this process that a NATS server refused for lack of permission, by operation.", "op"),
		violations: b.counter("splash_nats_violations_total",
			"Publishes and subscriptions a NATS node refused its clients for lack of permission, by operation and identity.", "op", "identity"),
	}
	n.set = set{n.denied, n.violations}
	initAll(n.denied, natsOps)
	return register(reg, n)
}

// PermissionDenied counts one refusal of this process's own connection.
func (n *NATS) PermissionDenied(op string) {
	if n == nil {
		return
	}
	n.denied.WithLabelValues(oneOf(op, natsOps)).Inc()
}

// Violation counts one refusal a node made to a client of identity (a
// user name or a pool; the caller keeps the set of identities bounded).
func (n *NATS) Violation(op, identity string) {
	if n == nil {
		return
	}
	n.violations.WithLabelValues(oneOf(op, natsOps), identity).Inc()
}
