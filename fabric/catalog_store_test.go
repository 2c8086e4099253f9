package fabric_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/toolspec"
)

func parseCatalog(t *testing.T, doc string) *toolspec.Catalog {
	t.Helper()
	cat, err := toolspec.Parse([]byte(doc), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func openCatalog(t *testing.T, js jetstream.JetStream, cfg fabric.Config) *fabric.CatalogStore {
	t.Helper()
	s, err := fabric.OpenCatalogStore(fabrictest.Ctx(t), js, cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func applyCatalog(t *testing.T, s *fabric.CatalogStore, doc string) {
	t.Helper()
	if _, err := s.Apply(fabrictest.Ctx(t), parseCatalog(t, doc)); err != nil {
		t.Fatal(err)
	}
}

func catalogKV(t *testing.T, env *fabrictest.Env) jetstream.KeyValue {
	t.Helper()
	kv, err := env.JS.KeyValue(fabrictest.Ctx(t), fabric.BucketCatalog)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

func listCatalog(t *testing.T, s *fabric.CatalogStore) []toolspec.Spec {
	t.Helper()
	specs, err := s.List(fabrictest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

func specNames(specs []toolspec.Spec) []string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}

func mustDigest(t *testing.T, set *toolspec.Set, name string) string {
	t.Helper()
	tool, ok := set.Lookup(name)
	if !ok {
		t.Fatalf("set %v lacks %s", set.Names(), name)
	}
	return tool.Digest()
}

const twoTools = `
tools:
  - name: text.upper
    description: Upper-cases its input.
  - name: demo.sum
    format: json
    input_schema: {type: object, properties: {a: {type: integer}}}
    max_attempts: 3
    deadline: 30s
    process: {command: [./sum.py]}
`

func TestCatalogStoreApplyListRemove(t *testing.T) {
	env := fabrictest.NewEnv(t)
	s := openCatalog(t, env.JS, env.Cfg)
	ctx := fabrictest.Ctx(t)
	cat := parseCatalog(t, twoTools)

	applied, err := s.Apply(ctx, cat)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"text.upper", "demo.sum"}; !slices.Equal(applied, want) {
		t.Errorf("applied %q, want %q", applied, want)
	}
	got := listCatalog(t, s)
	want := []toolspec.Spec{cat.Tools[1], cat.Tools[0]} // by name
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List:\n%+v\nwant:\n%+v", got, want)
	}

	// Applying again replaces a definition and leaves the others alone.
	applyCatalog(t, s, "tools: [{name: text.upper, description: Shouts.}]")
	got = listCatalog(t, s)
	if names := specNames(got); !slices.Equal(names, []string{"demo.sum", "text.upper"}) || got[1].Description != "Shouts." {
		t.Errorf("after a second apply: %+v", got)
	}

	if err := s.Remove(ctx, "demo.sum"); err != nil {
		t.Fatal(err)
	}
	if names := specNames(listCatalog(t, s)); !slices.Equal(names, []string{"text.upper"}) {
		t.Errorf("after remove: %q", names)
	}
	for _, name := range []string{"demo.sum", "never.published", "not a key!", ""} {
		err := s.Remove(ctx, name)
		fabrictest.WantErrIs(t, err, fabric.ErrToolNotPublished, toolspec.ErrNotFound)
	}
}

func TestCatalogStoreRefusesBadCatalog(t *testing.T) {
	env := fabrictest.NewEnv(t)
	s := openCatalog(t, env.JS, env.Cfg)
	applyCatalog(t, s, twoTools)
	before := listCatalog(t, s)
	tests := []struct {
		name      string
		cat       toolspec.Catalog // built directly: Parse would refuse most
		wantField string
		wantErr   error
	}{
		{name: "illegal name", cat: toolspec.Catalog{Tools: []toolspec.Spec{{Name: "text.upper", Description: "changed"}, {Name: "bad name"}}},
			wantField: "name", wantErr: toolspec.ErrInvalidName},
		{name: "schema on a text tool", cat: toolspec.Catalog{Tools: []toolspec.Spec{{Name: "demo.sum", InputSchema: json.RawMessage(`{"type":"object"}`)}}},
			wantField: "input_schema", wantErr: toolspec.ErrInvalidSchema},
		{name: "schema that does not compile", cat: toolspec.Catalog{Tools: []toolspec.Spec{{Name: "demo.sum", Format: toolspec.FormatJSON, OutputSchema: json.RawMessage(`{"type":5}`)}}},
			wantField: "output_schema", wantErr: toolspec.ErrInvalidSchema},
		{name: "limit out of range", cat: toolspec.Catalog{Tools: []toolspec.Spec{{Name: "demo.sum", MaxAttempts: 1000}}},
			wantField: "max_attempts", wantErr: toolspec.ErrOutOfRange},
		{name: "duplicate", cat: toolspec.Catalog{Tools: []toolspec.Spec{{Name: "new.tool"}, {Name: "new.tool"}}},
			wantField: "name", wantErr: toolspec.ErrDuplicateTool},
		{name: "larger than the bucket's values", cat: toolspec.Catalog{Tools: []toolspec.Spec{{Name: "new.tool"}, {Name: "huge.tool", Description: strings.Repeat("x", int(env.Cfg.MaxMsgSize))}}},
			wantErr: toolspec.ErrOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			applied, err := s.Apply(fabrictest.Ctx(t), &tt.cat)
			fabrictest.WantErrIs(t, err, toolspec.ErrInvalidCatalog, tt.wantErr)
			var fe *toolspec.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.wantField {
				t.Errorf("err %v: want a FieldError on field %q", err, tt.wantField)
			}
			if applied != nil {
				t.Errorf("applied %q, want none", applied)
			}
			if after := listCatalog(t, s); !reflect.DeepEqual(after, before) {
				t.Errorf("bucket changed:\n%+v\nwant:\n%+v", after, before)
			}
		})
	}
}

func TestOpenCatalogStore(t *testing.T) {
	env := fabrictest.NewEnv(t)
	ctx := fabrictest.Ctx(t)
	_, err := fabric.OpenCatalogStore(ctx, env.JS, env.Cfg, false)
	fabrictest.WantErrIs(t, err, fabric.ErrCatalogNotProvisioned)

	bad := env.Cfg
	bad.Replicas = 0
	_, err = fabric.OpenCatalogStore(ctx, env.JS, bad, true)
	fabrictest.WantErrIs(t, err, fabric.ErrInvalidConfig)

	s := openCatalog(t, env.JS, env.Cfg)
	applyCatalog(t, s, twoTools)
	// Creating again updates the bucket in place; binding finds it.
	openCatalog(t, env.JS, env.Cfg)
	bound, err := fabric.OpenCatalogStore(ctx, env.JS, env.Cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	if names := specNames(listCatalog(t, bound)); !slices.Equal(names, []string{"demo.sum", "text.upper"}) {
		t.Errorf("bound store lists %q", names)
	}
	st, err := catalogKV(t, env).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.History() != 1 || st.TTL() != 0 {
		t.Errorf("history %d ttl %v, want 1 and none", st.History(), st.TTL())
	}
}

func TestCatalogStoreListReportsBadRecords(t *testing.T) {
	env := fabrictest.NewEnv(t)
	s := openCatalog(t, env.JS, env.Cfg)
	applyCatalog(t, s, twoTools)
	kv := catalogKV(t, env)
	ctx := fabrictest.Ctx(t)
	if _, err := kv.Put(ctx, "bad.json", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "other.key", []byte(`{"name":"demo.other"}`)); err != nil {
		t.Fatal(err)
	}
	specs, err := s.List(ctx)
	if names := specNames(specs); !slices.Equal(names, []string{"demo.sum", "text.upper"}) {
		t.Errorf("valid specs %q", names)
	}
	fabrictest.WantErrIs(t, err, toolspec.ErrInvalidCatalog)
	for _, key := range []string{`"bad.json"`, `"other.key"`} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("err %v does not name %s", err, key)
		}
	}
	// A bad record can still be removed by its key.
	if err := s.Remove(ctx, "bad.json"); err != nil {
		t.Fatal(err)
	}
}

// catalogRecorder collects what a Watch hands its callbacks. The channels
// are buffered beyond what a test produces, so the watch goroutine never
// waits on the test.
type catalogRecorder struct {
	sets chan *toolspec.Set
	errs chan error
}

func newCatalogRecorder() *catalogRecorder {
	return &catalogRecorder{sets: make(chan *toolspec.Set, 256), errs: make(chan error, 256)}
}

func (r *catalogRecorder) onChange(s *toolspec.Set) { r.sets <- s }

// onError drops what the buffer cannot hold: a restart may report many
// failed tries, and the test reads only the first errors.
func (r *catalogRecorder) onError(err error) {
	select {
	case r.errs <- err:
	default:
	}
}

// next waits for the next Set and checks its names.
func (r *catalogRecorder) next(t *testing.T, what string, wantNames ...string) *toolspec.Set {
	t.Helper()
	s := testwait.Receive(t, 0, what, r.sets)
	if names := s.Names(); !slices.Equal(names, wantNames) && (len(names) != 0 || len(wantNames) != 0) {
		t.Fatalf("%s: set %q, want %q", what, names, wantNames)
	}
	return s
}

// nextErr waits for the next reported error and checks it names key.
func (r *catalogRecorder) nextErr(t *testing.T, key string, want ...error) {
	t.Helper()
	err := testwait.Receive(t, 0, "an error about "+key, r.errs)
	fabrictest.WantErrIs(t, err, want...)
	if !strings.Contains(err.Error(), `"`+key+`"`) {
		t.Errorf("err %v does not name %q", err, key)
	}
}

func watchCatalog(t *testing.T, s *fabric.CatalogStore) *catalogRecorder {
	t.Helper()
	r := newCatalogRecorder()
	stop, err := s.Watch(fabrictest.Ctx(t), r.onChange, r.onError)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return r
}

func TestCatalogWatch(t *testing.T) {
	env := fabrictest.NewEnv(t)
	s := openCatalog(t, env.JS, env.Cfg)
	kv := catalogKV(t, env)
	ctx := fabrictest.Ctx(t)
	applyCatalog(t, s, twoTools)
	r := watchCatalog(t, s)

	first := r.next(t, "the initial set", "demo.sum", "text.upper")
	sumV1 := mustDigest(t, first, "demo.sum")

	applyCatalog(t, s, "tools: [{name: text.lower}]")
	r.next(t, "an added tool", "demo.sum", "text.lower", "text.upper")

	applyCatalog(t, s, "tools: [{name: demo.sum, format: json, max_attempts: 5}]")
	changed := r.next(t, "a changed tool", "demo.sum", "text.lower", "text.upper")
	if mustDigest(t, changed, "demo.sum") == sumV1 {
		t.Errorf("a changed contract kept its digest")
	}
	if _, ok := first.Lookup("text.lower"); ok {
		t.Errorf("an earlier Set changed")
	}

	if err := s.Remove(ctx, "text.lower"); err != nil {
		t.Fatal(err)
	}
	r.next(t, "a removed tool", "demo.sum", "text.upper")

	// Garbage written past Apply is skipped and reported; the rest stays.
	if _, err := kv.Put(ctx, "bad.json", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	r.next(t, "the set after a garbage record", "demo.sum", "text.upper")
	r.nextErr(t, "bad.json", toolspec.ErrInvalidCatalog, toolspec.ErrInvalidValue)

	// A record for another tool than its key names is refused too.
	if _, err := kv.Put(ctx, "other.key", []byte(`{"name":"demo.other"}`)); err != nil {
		t.Fatal(err)
	}
	r.next(t, "the set after a misfiled record", "demo.sum", "text.upper")
	r.nextErr(t, "other.key", toolspec.ErrInvalidCatalog, toolspec.ErrInvalidName)

	// A definition replaced by a bad one leaves the set.
	if _, err := kv.Put(ctx, "text.upper", []byte(`{"name":"text.upper","retries":3}`)); err != nil {
		t.Fatal(err)
	}
	r.next(t, "the set after a bad replacement", "demo.sum")
	r.nextErr(t, "text.upper", toolspec.ErrUnknownField)

	// Valid records still apply after bad ones; a purge removes.
	applyCatalog(t, s, "tools: [{name: text.upper}]")
	r.next(t, "a repaired tool", "demo.sum", "text.upper")
	if err := kv.Purge(ctx, "demo.sum"); err != nil {
		t.Fatal(err)
	}
	r.next(t, "a purged tool", "text.upper")

	select {
	case err := <-r.errs:
		t.Errorf("unexpected error: %v", err)
	default:
	}
}

func TestCatalogWatchEmptyBucket(t *testing.T) {
	env := fabrictest.NewEnv(t)
	s := openCatalog(t, env.JS, env.Cfg)
	r := watchCatalog(t, s)
	if set := r.next(t, "the initial set"); set == nil || set.Len() != 0 {
		t.Fatalf("initial set %v, want an empty one", set)
	}
	applyCatalog(t, s, "tools: [{name: text.upper}]")
	r.next(t, "the first tool", "text.upper")
}

func TestCatalogWatchStops(t *testing.T) {
	env := fabrictest.NewEnv(t)
	s := openCatalog(t, env.JS, env.Cfg)
	r := newCatalogRecorder()

	// By its context.
	ctx, cancel := context.WithCancel(fabrictest.Ctx(t))
	defer cancel()
	stop, err := s.Watch(ctx, r.onChange, r.onError)
	if err != nil {
		t.Fatal(err)
	}
	r.next(t, "the initial set")
	cancel()
	stop()
	stop() // idempotent

	// By stop alone.
	stop, err = s.Watch(fabrictest.Ctx(t), r.onChange, r.onError)
	if err != nil {
		t.Fatal(err)
	}
	r.next(t, "the initial set")
	stop()

	if _, err := s.Watch(fabrictest.Ctx(t), nil, nil); err == nil {
		t.Errorf("Watch without onChange: no error")
	}
}

// TestCatalogWatchAfterRestart restarts the server under a watch: the
// watch starts a new watcher once reconnected, and a tool published after
// the restart reaches it.
func TestCatalogWatchAfterRestart(t *testing.T) {
	srv := natstest.Start(t)
	nc := srv.Connect(nats.ReconnectWait(20 * time.Millisecond))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fabric.DefaultConfig()
	s := openCatalog(t, js, cfg)
	applyCatalog(t, s, "tools: [{name: text.upper}]")
	r := watchCatalog(t, s)
	r.next(t, "the initial set", "text.upper")

	srv.Restart()
	js2, err := jetstream.New(srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	applyCatalog(t, openCatalog(t, js2, cfg), "tools: [{name: text.lower}]")
	testwait.Until(t, 0, "the tool published after the restart", func() bool {
		select {
		case set := <-r.sets:
			_, ok := set.Lookup("text.lower")
			return ok && set.Len() == 2
		default:
			return false
		}
	})
}

// A watch started with a context that has no deadline lives until stop
// and hands the caller one set per change: the client ties the watcher to
// the context it was created with, and a watch whose watcher ended at once
// would restart in a loop, handing over the same set again and again.
func TestCatalogWatchWithoutDeadline(t *testing.T) {
	env := fabrictest.NewEnv(t)
	s := openCatalog(t, env.JS, env.Cfg)
	r := newCatalogRecorder()
	var calls atomic.Int64
	stop, err := s.Watch(context.Background(), func(set *toolspec.Set) {
		calls.Add(1)
		r.onChange(set)
	}, r.onError)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	r.next(t, "the initial set")
	applyCatalog(t, s, "tools: [{name: text.upper}]")
	r.next(t, "the first tool", "text.upper")
	applyCatalog(t, s, "tools: [{name: text.lower}]")
	r.next(t, "the second tool", "text.lower", "text.upper")
	if n := calls.Load(); n != 3 {
		t.Errorf("onChange ran %d times for the initial set and two changes, want 3", n)
	}
}
