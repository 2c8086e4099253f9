package fabric

import "time"

// PullHeartbeat is the idle heartbeat every pull consumer of the fabric
// asks for in its pull requests (see Puller): the worker pools' and each
// host's events. Two missed heartbeats are how a client learns that the
// server holds none of its pull requests, so they bound how long a lost
// request leaves a pull silent: 1 s here, against 30 s at nats.go's
// default (half the pull expiry), for one small status message per idle
// half second per waiting request.
//
// nats.go's Consume loses requests that way on a loaded process: it pulls
// again when the count of messages it asked for and has not yet handled
// falls below a threshold, checked after each message it hands to the
// callback; the check is skipped while a pull request is being sent, and
// nothing repeats it once that send ends. If the messages that request
// brings are all handled before the send is marked finished (the sending
// goroutine can be descheduled right after the send, for instance when it
// hands a contended connection lock to a waiter), the client asks for
// nothing more while the server holds no request of its, until the
// heartbeats are missed. Every pull of the fabric therefore goes through
// a Puller, which decides and counts its requests under one lock before
// the send.
const PullHeartbeat = 500 * time.Millisecond
