package fabric

import (
	"crypto/rand"

	"github.com/splashfabric/splashfabric/protocol"
)

// reconcileIDPrefix marks a reconciliation's request id, so one is never
// taken for an operation's in a log line.
const reconcileIDPrefix = "rc-"

// NewReconcileRequestID returns a fresh reconciliation request id: 130
// bits from the operating system's generator, so an answer captured for
// one request can never be bound to another.
func NewReconcileRequestID() string { return reconcileIDPrefix + rand.Text() }

// NewReconcileRequest asks about the operation of sessionID whose durable
// key is operationKey, on tool, under a fresh request id. It names the
// operation by that key only, never by the host's own id for it. Empty
// ids or an illegal tool name are refused with protocol.ErrInvalidMessage
// (or protocol.ValidateToolName's error).
func NewReconcileRequest(sessionID, tool, operationKey string) (protocol.OperationReconcileRequest, error) {
	req := protocol.OperationReconcileRequest{
		SessionID:    sessionID,
		RequestID:    NewReconcileRequestID(),
		Tool:         tool,
		OperationKey: operationKey,
	}
	if err := req.Validate(); err != nil {
		return protocol.OperationReconcileRequest{}, err
	}
	return req, nil
}

// ReconcileQueue is the queue group the workers of tool's pool answer its
// reconciliation requests in, so one of them answers each request. It is
// the pool consumer's name, which is one legal token for any tool name.
func ReconcileQueue(tool string) string { return ConsumerName(tool) }
