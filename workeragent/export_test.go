package workeragent

// MissedHeartbeats counts the pulls of a that the JetStream client found
// silent for two heartbeats and made again.
func MissedHeartbeats(a *Agent) uint64 { return a.stats.missedHeartbeats.Load() }
