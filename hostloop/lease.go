package hostloop

import (
	"context"
	"strings"
)

// Leases are where the hosts of one fabric hold the incarnations (process
// lifetimes) whose durable sessions they drive. A process holds its own
// incarnation's lease while it lives; once a lease lapses (its holder was
// killed, or released it in a graceful stop) any host may take it and
// carry those sessions on from their ledgers. Holding is what makes one
// host, and only one, the driver of a session.
//
// An implementation renews what it holds on its own until Release, so a
// lease lapses only when its holder is gone.
type Leases interface {
	// Take makes holder (a live incarnation) the holder of incarnation's
	// lease: when there is none, it lapsed, or holder has it already.
	// Held by another live holder, it fails with ErrLeaseHeld.
	Take(ctx context.Context, incarnation, holder string) error
	// Release gives incarnation's lease up, so another host may take it
	// at once.
	Release(ctx context.Context, incarnation string) error
}

// LeaseHolders is implemented by Leases that can say who holds a lease,
// so a host asked about a session it does not drive names the one that
// does.
type LeaseHolders interface {
	// Holder returns the live holder of incarnation's lease, "" if none.
	Holder(ctx context.Context, incarnation string) (string, error)
}

// ParseSessionID splits a session id ("s-<host id>-<12 hex>-<n>") into
// its incarnation and host id, for any host; ok is false for anything
// else.
func ParseSessionID(id SessionID) (incarnation, hostID string, ok bool) {
	rest, ok := strings.CutPrefix(string(id), "s-")
	if !ok {
		return "", "", false
	}
	cut := strings.LastIndexByte(rest, '-')
	if cut < 0 {
		return "", "", false
	}
	inc := rest[:cut]
	hostID, ok = incarnationHost(inc)
	if !ok {
		return "", "", false
	}
	if got, ok := sessionIncarnation(hostID, id); !ok || got != inc {
		return "", "", false
	}
	return inc, hostID, true
}

// incarnationHost is the host id of an incarnation "<host id>-<12 hex>".
func incarnationHost(inc string) (string, bool) {
	n := len(inc) - incarnationHexLen - 1
	if n < 1 || inc[n] != '-' {
		return "", false
	}
	return inc[:n], true
}
