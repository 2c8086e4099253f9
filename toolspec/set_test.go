package toolspec_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/splashfabric/splashfabric/toolspec"
)

func mustTool(t *testing.T, s toolspec.Spec) *toolspec.Tool {
	t.Helper()
	tool, err := s.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func TestSet(t *testing.T) {
	a := mustTool(t, toolspec.Spec{Name: "a"})
	b := mustTool(t, toolspec.Spec{Name: "b"})
	c := mustTool(t, toolspec.Spec{Name: "c"})
	b2 := mustTool(t, toolspec.Spec{Name: "b", Idempotent: true})

	set, err := toolspec.NewSet(c, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Names(); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Fatalf("names %v", got)
	}
	if got := set.Tools(); len(got) != 3 || got[0] != a || got[2] != c {
		t.Fatalf("tools not sorted: %v", got)
	}
	set.Tools()[0] = c // the caller's copy
	if got, ok := set.Lookup("a"); !ok || got != a || set.Tools()[0] != a {
		t.Fatal("set changed through Tools")
	}
	if _, ok := set.Lookup("z"); ok {
		t.Fatal("found a missing tool")
	}

	overlay, _ := toolspec.NewSet(b2)
	merged := set.With(overlay)
	if got, _ := merged.Lookup("b"); got != b2 || merged.Len() != 3 {
		t.Fatal("overlay did not replace b")
	}
	if got, _ := set.Lookup("b"); got != b {
		t.Fatal("With changed its receiver")
	}
	fewer := merged.Without("a", "zzz")
	if got := fewer.Names(); !reflect.DeepEqual(got, []string{"b", "c"}) || merged.Len() != 3 {
		t.Fatalf("Without: %v, receiver len %d", got, merged.Len())
	}

	_, err = toolspec.NewSet(a, b, b2)
	var fe *toolspec.FieldError
	if !errors.Is(err, toolspec.ErrDuplicateTool) || !errors.Is(err, toolspec.ErrInvalidCatalog) || !errors.As(err, &fe) || fe.Tool != "b" {
		t.Fatalf("duplicate: %v", err)
	}
}

func TestNilSet(t *testing.T) {
	var set *toolspec.Set
	if _, ok := set.Lookup("a"); ok || set.Len() != 0 || set.Tools() != nil || set.Names() != nil {
		t.Fatal("nil set is not empty")
	}
	a := mustTool(t, toolspec.Spec{Name: "a"})
	one, _ := toolspec.NewSet(a)
	if got := set.With(one); got.Len() != 1 {
		t.Fatal("nil.With(one) lost the overlay")
	}
	if got := one.With(nil); got.Len() != 1 {
		t.Fatal("one.With(nil) lost tools")
	}
	if got := set.Without("a"); got.Len() != 0 {
		t.Fatal("nil.Without is not empty")
	}
}

func TestCatalogCompile(t *testing.T) {
	cat := &toolspec.Catalog{Tools: []toolspec.Spec{{Name: "a"}, {Name: "a"}}}
	if _, err := cat.Compile(); !errors.Is(err, toolspec.ErrDuplicateTool) {
		t.Fatalf("duplicate compiled: %v", err)
	}
	cat = &toolspec.Catalog{Tools: []toolspec.Spec{{Name: "a"}, {Name: "b", MaxOutputBytes: -1}}}
	if _, err := cat.Compile(); !errors.Is(err, toolspec.ErrOutOfRange) {
		t.Fatalf("invalid spec compiled: %v", err)
	}
}
