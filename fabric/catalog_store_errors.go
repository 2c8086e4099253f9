package fabric

import (
	"errors"

	"github.com/splashfabric/splashfabric/toolspec"
)

// The errors of the catalog store (CatalogStore). A definition refused
// by Apply is a *toolspec.FieldError instead, matching
// toolspec.ErrInvalidCatalog.
var (
	// ErrCatalogNotProvisioned reports, from OpenCatalogStore without
	// create, that the splash_catalog bucket does not exist: nobody has
	// published a tool yet. A host treats it as an empty published
	// catalog, since it may not create the bucket itself.
	ErrCatalogNotProvisioned = errors.New("fabric: tool catalog bucket not provisioned")

	// ErrToolNotPublished reports, from CatalogStore.Remove, a name the
	// bucket holds no definition for. It also matches
	// toolspec.ErrNotFound, so a miss reads the same wherever a tool is
	// looked up.
	ErrToolNotPublished error = notPublishedError{}
)

// notPublishedError is ErrToolNotPublished: a comparable type, so errors.Is
// matches the sentinel itself, with an Is for toolspec.ErrNotFound.
type notPublishedError struct{}

func (notPublishedError) Error() string { return "fabric: tool not published" }

func (notPublishedError) Is(target error) bool { return target == toolspec.ErrNotFound }
