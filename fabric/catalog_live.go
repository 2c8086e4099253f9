package fabric

import (
	"sync/atomic"

	"github.com/splashfabric/splashfabric/toolspec"
)

// LiveCatalog is the catalog a host serves: its own file catalog (the
// base) overlaid by the tools published on the fabric, a published tool
// replacing the base's of the same name. A host wires CatalogStore.Watch
// to it:
//
//	live := fabric.NewLiveCatalog(fileSet)
//	stop, err := store.Watch(ctx, live.SetPublished, onError)
//
// Current is safe for concurrent use and never blocks: it loads the Set
// SetPublished last stored. SetPublished computes the overlay once per
// change; it is meant to be called from one goroutine (Watch's), since
// two racing calls may store in either order.
type LiveCatalog struct {
	// base is set by NewLiveCatalog and never changes.
	base *toolspec.Set
	// current is base.With(the last published Set); written by
	// SetPublished, read by Current.
	current atomic.Pointer[toolspec.Set]
}

// NewLiveCatalog returns a LiveCatalog serving base until the first
// SetPublished. A nil base is an empty one.
func NewLiveCatalog(base *toolspec.Set) *LiveCatalog {
	c := &LiveCatalog{base: base}
	c.current.Store(base.With(nil))
	return c
}

// Current returns the tools to serve now: an immutable snapshot that a
// later SetPublished does not change.
func (c *LiveCatalog) Current() *toolspec.Set { return c.current.Load() }

// SetPublished replaces the published overlay; nil (or an empty Set)
// leaves the base alone. A tool that leaves the published Set falls back
// to the base's definition, if the base has one.
func (c *LiveCatalog) SetPublished(published *toolspec.Set) {
	c.current.Store(c.base.With(published))
}

// PoolOf returns the pool that serves tool in the current catalog (its
// definition's pool, by default the tool's own name); a tool the catalog
// lacks is its own pool. Safe for concurrent use.
func (c *LiveCatalog) PoolOf(tool string) string {
	if t, ok := c.Current().Lookup(tool); ok {
		return t.Pool()
	}
	return tool
}
