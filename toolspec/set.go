package toolspec

import (
	"fmt"
	"slices"
	"strings"
)

// Set is an immutable snapshot of compiled tools with unique names; it is
// safe for concurrent use. A nil *Set is an empty one.
type Set struct {
	byName map[string]*Tool
	sorted []*Tool // by name
}

// NewSet returns a Set of tools, refusing a name given twice with a
// *FieldError wrapping ErrDuplicateTool.
func NewSet(tools ...*Tool) (*Set, error) {
	byName := make(map[string]*Tool, len(tools))
	for _, t := range tools {
		if _, dup := byName[t.Name()]; dup {
			return nil, fieldErr(t.Name(), "name", fmt.Errorf("%w: the set already holds it", ErrDuplicateTool))
		}
		byName[t.Name()] = t
	}
	return newSet(byName), nil
}

func newSet(byName map[string]*Tool) *Set {
	sorted := make([]*Tool, 0, len(byName))
	for _, t := range byName {
		sorted = append(sorted, t)
	}
	slices.SortFunc(sorted, func(a, b *Tool) int { return strings.Compare(a.Name(), b.Name()) })
	return &Set{byName: byName, sorted: sorted}
}

// Lookup returns the tool named name.
func (s *Set) Lookup(name string) (*Tool, bool) {
	if s == nil {
		return nil, false
	}
	t, ok := s.byName[name]
	return t, ok
}

// Tools returns the tools sorted by name, in a slice the caller owns.
func (s *Set) Tools() []*Tool {
	if s == nil {
		return nil
	}
	return slices.Clone(s.sorted)
}

// Names returns the tool names, sorted.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	names := make([]string, len(s.sorted))
	for i, t := range s.sorted {
		names[i] = t.Name()
	}
	return names
}

// Len returns the number of tools.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.sorted)
}

// With returns a new Set holding the tools of s and of overlay, overlay's
// replacing those of s with the same name: a worker's file catalog
// overlaid by the fabric's, say. Neither s nor overlay changes.
func (s *Set) With(overlay *Set) *Set {
	byName := make(map[string]*Tool, s.Len()+overlay.Len())
	for _, t := range s.Tools() {
		byName[t.Name()] = t
	}
	for _, t := range overlay.Tools() {
		byName[t.Name()] = t
	}
	return newSet(byName)
}

// Without returns a new Set holding the tools of s except those named;
// names s does not hold are ignored.
func (s *Set) Without(names ...string) *Set {
	byName := make(map[string]*Tool, s.Len())
	for _, t := range s.Tools() {
		byName[t.Name()] = t
	}
	for _, n := range names {
		delete(byName, n)
	}
	return newSet(byName)
}
