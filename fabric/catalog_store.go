package fabric

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/toolspec"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// BucketCatalog is the KV bucket of the tool definitions operators publish
// on the fabric (splash tools apply): key = the tool name, value = its
// toolspec.Spec as JSON.
const BucketCatalog = "splash_catalog"

// Watcher restarts back off from watchRetryMin to watchRetryMax.
const (
	watchRetryMin = 100 * time.Millisecond
	watchRetryMax = 5 * time.Second
)

// CatalogStore reads and writes the splash_catalog bucket, so hosts pick
// up tools an operator adds or changes without a restart.
//
// Only operators write the bucket (Apply, Remove); a host only reads it
// (Watch, List). The NATS permissions of deploy/nats/splash.conf hold the
// host user to that: it may create the bucket and update its settings
// (OpenCatalogStore with create) but not put, delete or purge a record. A
// user that may not create the bucket at all (a narrower deployment) binds
// with create=false and treats ErrCatalogNotProvisioned as "nothing
// published yet"; a host with every right, as in splash dev, may simply
// create it.
//
// A CatalogStore holds no state besides its binding and is safe for
// concurrent use. Every call takes ctx first and, when ctx has no
// deadline, is bounded by a default timeout.
type CatalogStore struct {
	js  jetstream.JetStream
	kv  jetstream.KeyValue
	cfg Config
}

// OpenCatalogStore binds to the splash_catalog bucket. With create it
// creates the bucket, or updates it to match cfg (Replicas, Storage,
// MaxMsgSize as its largest value); without, a missing bucket is
// ErrCatalogNotProvisioned.
func OpenCatalogStore(ctx context.Context, js jetstream.JetStream, cfg Config, create bool) (*CatalogStore, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	var kv jetstream.KeyValue
	var err error
	if create {
		kv, err = js.CreateOrUpdateKeyValue(ctx, catalogBucketConfig(cfg))
	} else {
		kv, err = js.KeyValue(ctx, BucketCatalog)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, fmt.Errorf("%w: %w", ErrCatalogNotProvisioned, err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("fabric: bucket %s: %w", BucketCatalog, err)
	}
	return &CatalogStore{js: js, kv: kv, cfg: cfg}, nil
}

func catalogBucketConfig(cfg Config) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      BucketCatalog,
		Description: "Splash tool catalog: key = tool name, value = its definition as JSON",
		// Nothing reads an earlier definition: a watcher wants the
		// latest, and an operator keeps catalogs in files.
		History:      1,
		Storage:      cfg.Storage,
		Replicas:     cfg.Replicas,
		MaxValueSize: cfg.MaxMsgSize,
	}
}

// Apply publishes every tool of cat, adding it or replacing the
// definition of the same name, and returns the names it wrote, in
// catalog order. It never removes a tool cat leaves out (Remove does).
//
// The whole catalog is checked first: it must compile (Catalog.Compile,
// names unique) and every definition must fit in the bucket's largest
// value. If it does not, nothing is written and the error is a
// *toolspec.FieldError naming the tool and the field. A network failure
// midway leaves the tools before it written; those are returned with the
// error, and applying the same catalog again completes it.
//
// A value is json.Marshal of the Spec as cat holds it, defaults not
// filled in, so a Process.Dir is the absolute path the catalog file
// resolved it to on the machine that applied it.
func (s *CatalogStore) Apply(ctx context.Context, cat *toolspec.Catalog) (applied []string, err error) {
	if cat == nil {
		return nil, nil
	}
	if _, err := cat.Compile(); err != nil {
		return nil, err
	}
	values := make([][]byte, len(cat.Tools))
	for i, spec := range cat.Tools {
		data, err := json.Marshal(spec)
		if err != nil {
			return nil, &toolspec.FieldError{Tool: spec.Name, Err: fmt.Errorf("%w: %v", toolspec.ErrInvalidValue, err)}
		}
		if len(data) > int(s.cfg.MaxMsgSize) {
			return nil, &toolspec.FieldError{Tool: spec.Name, Err: fmt.Errorf("%w: the definition is %d bytes of JSON, the %s bucket holds at most %d",
				toolspec.ErrOutOfRange, len(data), BucketCatalog, s.cfg.MaxMsgSize)}
		}
		values[i] = data
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	for i, spec := range cat.Tools {
		if _, err := s.kv.Put(ctx, spec.Name, values[i]); err != nil {
			return applied, fmt.Errorf("fabric: publish tool %q: %w", spec.Name, err)
		}
		applied = append(applied, spec.Name)
	}
	return applied, nil
}

// List returns the published definitions, sorted by name. A record that
// does not read back as a valid definition of its key's tool is left out,
// and List then returns the valid ones together with an error naming
// each record left out, so a caller may still show the rest.
func (s *CatalogStore) List(ctx context.Context) ([]toolspec.Spec, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	// One ordered consumer streams every value, where listing the keys
	// and getting each would cost a round trip per tool.
	w, err := s.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("fabric: list %s: %w", BucketCatalog, err)
	}
	defer stopWatcher(w)
	var specs []toolspec.Spec
	var bad []error
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("fabric: list %s: %w", BucketCatalog, ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("fabric: list %s: watcher closed", BucketCatalog)
			}
			if e == nil {
				slices.SortFunc(specs, func(a, b toolspec.Spec) int { return strings.Compare(a.Name, b.Name) })
				return specs, errors.Join(bad...)
			}
			spec, err := readCatalogRecord(e)
			if err != nil {
				bad = append(bad, err)
				continue
			}
			specs = append(specs, spec)
		}
	}
}

// Remove deletes the definition of the tool named name. A name the bucket
// holds nothing for (including one that is not a legal key) is
// ErrToolNotPublished. The delete is conditional on the revision read
// first, so a definition written in between is never removed unseen.
func (s *CatalogStore) Remove(ctx context.Context, name string) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	e, err := s.kv.Get(ctx, name)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrInvalidKey):
		return fmt.Errorf("%w: %q", ErrToolNotPublished, clip.String(name, clip.Echo))
	case err != nil:
		return fmt.Errorf("fabric: remove tool %q: %w", clip.String(name, clip.Echo), err)
	}
	if err := s.kv.Delete(ctx, name, jetstream.LastRevision(e.Revision())); err != nil {
		return fmt.Errorf("fabric: remove tool %q: %w", clip.String(name, clip.Echo), err)
	}
	return nil
}

// readCatalogRecord reads one put record: a strict definition whose name
// is its key. Every refusal matches toolspec.ErrInvalidCatalog.
func readCatalogRecord(e jetstream.KeyValueEntry) (toolspec.Spec, error) {
	spec, err := toolspec.ParseSpec(e.Value())
	if err == nil && spec.Name != e.Key() {
		err = &toolspec.FieldError{Tool: spec.Name, Field: "name", Err: fmt.Errorf("%w: the record is stored under another tool's key", toolspec.ErrInvalidName)}
	}
	if err != nil {
		return toolspec.Spec{}, fmt.Errorf("fabric: catalog record %q (revision %d): %w", clip.String(e.Key(), clip.Echo), e.Revision(), err)
	}
	return spec, nil
}

// Watch keeps the published catalog current for the caller: it calls
// onChange with a new immutable Set of every valid published tool once
// the bucket's initial values are in, then again after each change (a
// tool put, replaced or removed), and after it resynchronised.
//
// A record that does not parse or compile is left out of the Set,
// replacing any earlier definition of its key (the operator replaced
// that one, so it no longer describes the tool), and reported to
// onError, which may be nil; the other tools still apply.
//
// The first watcher is created before Watch returns, so a refusal (the
// user may not read the bucket) is Watch's error. Then one goroutine
// owns the watch and makes every call of onChange and onError, one at a
// time. After a reconnect it starts a new watcher and rebuilds the Set
// from that one's initial values, since the old one may have missed a
// change while the connection was down; until then the caller keeps the
// Set it has. A restart that fails is reported and retried with backoff.
//
// The watch ends when ctx ends or stop is called; stop ends it and waits
// for its goroutine, and may be called more than once.
func (s *CatalogStore) Watch(ctx context.Context, onChange func(*toolspec.Set), onError func(error)) (stop func(), err error) {
	if onChange == nil {
		return nil, errors.New("fabric: catalog watch: nil onChange")
	}
	nc := s.js.Conn()
	cw := &catalogWatch{store: s, onChange: onChange, onError: onError, nc: nc}
	wctx, cancel := context.WithCancel(ctx)
	// Registered before the watcher starts, so no reconnect after it
	// goes unseen.
	status := nc.StatusChanged(nats.CONNECTED)
	epoch := nc.Stats().Reconnects
	w, err := cw.start(wctx)
	if err != nil {
		cancel()
		nc.RemoveStatusListener(status)
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer nc.RemoveStatusListener(status)
		cw.run(wctx, w, epoch, status)
	}()
	return func() {
		cancel()
		<-done
	}, nil
}

// catalogWatch is the state of one Watch. Every field is set before its
// goroutine starts and only read after.
type catalogWatch struct {
	store    *CatalogStore
	onChange func(*toolspec.Set)
	onError  func(error)
	nc       *nats.Conn
}

// start creates a watcher on every key, deletes and purges included, so
// a removed tool leaves the Set.
func (cw *catalogWatch) start(ctx context.Context) (jetstream.KeyWatcher, error) {
	// ctx is the watch's own: the client ties the watcher's subscription
	// to it, so a context bounded for the creation alone would end the
	// watcher as soon as it was made.
	w, err := cw.store.kv.WatchAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("fabric: watch %s: %w", BucketCatalog, err)
	}
	return w, nil
}

// run is the watch goroutine: it follows w until ctx ends, and replaces
// it after a reconnect or when it closes.
func (cw *catalogWatch) run(ctx context.Context, w jetstream.KeyWatcher, epoch uint64, status chan nats.Status) {
	for {
		again := cw.follow(ctx, w, epoch, status)
		stopWatcher(w)
		if !again {
			return
		}
		w = nil
		for delay := watchRetryMin; w == nil; delay = min(2*delay, watchRetryMax) {
			epoch = cw.nc.Stats().Reconnects
			var err error
			if w, err = cw.start(ctx); err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			cw.report(fmt.Errorf("fabric: catalog watch restart: %w", err))
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// follow applies w's entries to a catalog of its own, handing the caller
// a Set once the initial values are in and after every entry since. It
// reports whether the watch must go on with a new watcher: after a
// reconnect, or when w closed while ctx is still live.
func (cw *catalogWatch) follow(ctx context.Context, w jetstream.KeyWatcher, epoch uint64, status chan nats.Status) bool {
	tools := make(map[string]*toolspec.Tool)
	current := false
	for {
		select {
		case <-ctx.Done():
			return false
		case <-status:
			if cw.nc.Stats().Reconnects != epoch {
				return true
			}
		case e, ok := <-w.Updates():
			if !ok {
				return ctx.Err() == nil
			}
			if e == nil {
				current = true
			} else {
				cw.apply(tools, e)
			}
			if current {
				cw.publish(tools)
			}
		}
	}
}

// apply updates tools with one entry.
func (cw *catalogWatch) apply(tools map[string]*toolspec.Tool, e jetstream.KeyValueEntry) {
	if e.Operation() != jetstream.KeyValuePut {
		delete(tools, e.Key())
		return
	}
	spec, err := readCatalogRecord(e)
	var t *toolspec.Tool
	if err == nil {
		if t, err = spec.Compile(); err != nil {
			err = fmt.Errorf("fabric: catalog record %q (revision %d): %w", clip.String(e.Key(), clip.Echo), e.Revision(), err)
		}
	}
	if err != nil {
		delete(tools, e.Key())
		cw.report(err)
		return
	}
	tools[e.Key()] = t
}

// publish hands the caller a Set of tools. Keys are names, so the Set
// cannot refuse a duplicate.
func (cw *catalogWatch) publish(tools map[string]*toolspec.Tool) {
	list := make([]*toolspec.Tool, 0, len(tools))
	for _, t := range tools {
		list = append(list, t)
	}
	set, err := toolspec.NewSet(list...)
	if err != nil {
		cw.report(fmt.Errorf("fabric: catalog watch: %w", err))
		return
	}
	cw.onChange(set)
}

func (cw *catalogWatch) report(err error) {
	if cw.onError != nil {
		cw.onError(err)
	}
}

// stopWatcher stops w and drains its channel until the client closes it,
// so the subscription's delivery goroutine is never left blocked on a full
// channel. The drain is bounded in case the client never closes it.
func stopWatcher(w jetstream.KeyWatcher) {
	_ = w.Stop()
	t := time.NewTimer(defaultTimeout)
	defer t.Stop()
	for {
		select {
		case _, ok := <-w.Updates():
			if !ok {
				return
			}
		case <-t.C:
			return
		}
	}
}
