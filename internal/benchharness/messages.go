package benchharness

// messageCounter is a runner that can read its server's message counters:
// how many messages the server has taken in from clients and delivered to
// them. InFlight reports their growth per operation (msgs_in/op,
// msgs_out/op): publishes, pull requests, acks and API requests in;
// deliveries, PubAcks and API answers out. Unlike time, the count does not
// depend on what else the machine runs.
type messageCounter interface {
	serverMessages() (in, out int64)
}

// serverMessages reads the server's counters; zeros if it cannot.
func (s *benchServer) serverMessages() (in, out int64) {
	v, err := s.Varz(nil)
	if err != nil {
		return 0, 0
	}
	return v.InMsgs, v.OutMsgs
}
