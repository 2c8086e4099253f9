package fabric

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/internal/recordauth"
	"github.com/splashfabric/splashfabric/protocol"
)

// What a key ring has sealed lives on in the fabric's stores until it
// expires or is removed. A retired key can be dropped from a ring once
// none of it is left: CountKeyUse says how much each key still holds.

// The stores CountKeyUse reads, as it names them.
const (
	KeyUseLedger   = "ledger"          // SPLASH_LEDGER: live sessions' ledgers
	KeyUseSessions = "session_archive" // splash_sessions: outcomes, incarnations, leases
	KeyUseCancels  = "cancel_records"  // splash_cancel
	KeyUseJournals = "journals"        // every splash_idempotency* bucket
	KeyUseEvents   = "events"          // SPLASH_EVENTS: answers, chunks, stored answers
)

// NoKeyID is the key id CountKeyUse files records under that name no key:
// sealed before key rings, by a single key that any ring holding it
// verifies.
const NoKeyID = "-"

// KeyUse counts sealed records and frames per store and per key id.
type KeyUse map[string]map[string]int

func (u KeyUse) add(store, id string) {
	if u[store] == nil {
		u[store] = make(map[string]int)
	}
	u[store][id]++
}

// Total is how many records and frames of every store key id sealed.
func (u KeyUse) Total(id string) int {
	n := 0
	for _, byKey := range u {
		n += byKey[id]
	}
	return n
}

// IDs returns every key id counted, sorted.
func (u KeyUse) IDs() []string {
	var ids []string
	for _, byKey := range u {
		for id := range byKey {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// CountKeyUse reads every store of the fabric that holds sealed records or
// frames and counts them by the key that sealed them: the latest value of
// each key of the buckets, every message of the ledger stream and of the
// events stream (only headers are read there). A store that does not exist
// counts nothing. It needs a user that may read every stream (ops); it
// reads, and changes nothing.
func CountKeyUse(ctx context.Context, js jetstream.JetStream) (KeyUse, error) {
	use := KeyUse{}
	records := func(store string) func(jetstream.Msg) {
		return func(m jetstream.Msg) {
			if len(m.Data()) == 0 || !kvPut(m) {
				return // a ledger's tombstone, or a deleted key
			}
			id, ok := recordauth.SealedBy(m.Data())
			switch {
			case !ok:
				use.add(store, "unsealed")
			case id == "":
				use.add(store, NoKeyID)
			default:
				use.add(store, id)
			}
		}
	}
	if err := scanStream(ctx, js, StreamLedger, false, false, records(KeyUseLedger)); err != nil {
		return nil, err
	}
	if err := scanStream(ctx, js, "KV_"+BucketSessions, true, false, records(KeyUseSessions)); err != nil {
		return nil, err
	}
	err := scanStream(ctx, js, "KV_"+BucketCancel, true, false, func(m jetstream.Msg) {
		if !kvPut(m) {
			return
		}
		id := NoKeyID
		if d := m.Data(); len(d) > 0 && d[0] != '{' {
			raw, _, _ := bytes.Cut(d, []byte{' '})
			id = string(raw)
		}
		use.add(KeyUseCancels, id)
	})
	if err != nil {
		return nil, err
	}
	names := js.StreamNames(ctx)
	var journals []string
	for name := range names.Name() {
		journals = append(journals, name)
	}
	if err := names.Err(); err != nil && !errors.Is(err, jetstream.ErrEndOfData) {
		return nil, fmt.Errorf("fabric: list journals: %w", err)
	}
	for _, name := range journals {
		if !strings.HasPrefix(name, "KV_"+JournalBucketPrefix) {
			continue
		}
		if err := scanStream(ctx, js, name, true, false, records(KeyUseJournals)); err != nil {
			return nil, err
		}
	}
	err = scanStream(ctx, js, StreamEvents, false, true, func(m jetstream.Msg) {
		id := m.Headers().Get(HeaderKey)
		if protocol.ValidateKeyID(id) != nil {
			id = NoKeyID
		}
		use.add(KeyUseEvents, id)
	})
	if err != nil {
		return nil, err
	}
	return use, nil
}

// kvOperation is the header a KV bucket marks deletes and purges with.
const kvOperation = "KV-Operation"

// kvPut reports a message that is not a KV delete or purge marker.
func kvPut(m jetstream.Msg) bool {
	op := m.Headers().Get(kvOperation)
	return op == "" || op == "PUT"
}

// scanStream hands every message of stream (the last one per subject with
// lastPerSubject, headers only with headersOnly) to f, through an ordered
// consumer that is gone when it returns. A stream that does not exist is
// empty.
func scanStream(ctx context.Context, js jetstream.JetStream, stream string, lastPerSubject, headersOnly bool, f func(jetstream.Msg)) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fabric: stream %s: %w", stream, err)
	}
	if s.CachedInfo().State.Msgs == 0 {
		return nil
	}
	cfg := jetstream.OrderedConsumerConfig{HeadersOnly: headersOnly}
	if lastPerSubject {
		cfg.DeliverPolicy = jetstream.DeliverLastPerSubjectPolicy
	}
	cons, err := s.OrderedConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("fabric: read %s: %w", stream, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("fabric: read %s: %w", stream, err)
	}
	// What the consumer had to deliver when it was made; messages stored
	// since are not waited for, and those that expire or are removed
	// meanwhile (a tombstone's TTL, a bucket's) end the scan early.
	for left := info.NumPending; left > 0; {
		batch, err := cons.Fetch(int(min(left, 256)), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return fmt.Errorf("fabric: read %s: %w", stream, err)
		}
		n := uint64(0)
		for m := range batch.Messages() {
			f(m)
			n++
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return fmt.Errorf("fabric: read %s: %w", stream, err)
		}
		if n == 0 {
			return nil
		}
		left -= min(n, left)
	}
	return nil
}
