package fabric

// InvokeHeadroom is what an invocation frame takes beside its tool's
// input: the invocation's other fields (request id, tool name,
// idempotency key, limits, contract digest) and the NATS headers that
// carry the frame's session, role, sequence, tag and message id. It is
// a generous bound of what they need (well under 1 KiB), so that an input
// within MaxToolInputBytes always publishes.
const InvokeHeadroom = 8 << 10

// MaxToolInputBytes is the longest tool input, as JSON text, that an
// invocation on these streams can carry: the streams' MaxMsgSize, or the
// server's max_payload when that is smaller (serverMax <= 0: unknown),
// less InvokeHeadroom. A host gives it to its runtimes
// (host.Config.MaxInputBytes), which refuse a longer input at the
// script's tool.start, before it takes any budget; published, it would
// only be refused by the server, again and again.
func (c Config) MaxToolInputBytes(serverMax int64) int {
	limit := int64(c.MaxMsgSize)
	if serverMax > 0 {
		limit = min(limit, serverMax)
	}
	return int(max(limit-InvokeHeadroom, 0))
}
