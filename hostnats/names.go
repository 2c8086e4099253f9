package hostnats

import "github.com/splashfabric/splashfabric/fabric"

// Names of the server-side resources only the host reads or writes
// directly. The KV ones follow JetStream's KV convention: a bucket B is
// the stream KV_B, and its key k the subject $KV.B.k, which the host
// publishes to asynchronously rather than through a blocking Put.
const (
	streamCancel    = "KV_" + fabric.BucketCancel
	cancelKVPrefix  = "$KV." + fabric.BucketCancel + "."
	streamSessions  = "KV_" + fabric.BucketSessions
	sessionKVPrefix = "$KV." + fabric.BucketSessions + "."
)

// hostConsumerName is the durable that reads hostID's events.
func hostConsumerName(hostID string) string { return "host_" + hostID }

// isTokenByte reports a byte of [A-Za-z0-9_-], the alphabet of host ids
// (fabric.ValidateHostID) and of the archive's keys.
func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
