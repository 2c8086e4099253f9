package fabric

import "time"

// PullHeartbeat is the idle heartbeat every pull consumer of the fabric
// asks for (jetstream.PullHeartbeat): the worker pools' and each host's
// events.
//
// nats.go's Consume pulls again when the count of messages it asked for
// and has not yet handled falls below a threshold, checked after each
// message it hands to the callback; the check is skipped while a pull
// request is being sent, and nothing repeats it once that send ends. If
// the messages that request brings are all handled before the send is
// marked finished, which a loaded machine with hundreds of runnable
// goroutines allows, the client asks for nothing more while the server
// holds no request of its: messages wait in the stream until the client
// notices two missing heartbeats. At the library's default (half the 30 s
// pull expiry) that stall lasts 30 s; it hit about one 10,000-operation
// benchmark run in twenty at 512 in flight, always with every in-flight
// operation queued in the stream and the server's count of the client's
// pull requests at zero. A 500 ms heartbeat bounds it to 1 s, for one
// small status message per idle half second per waiting request.
const PullHeartbeat = 500 * time.Millisecond
