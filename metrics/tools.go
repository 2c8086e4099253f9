package metrics

import "sync"

// DefaultMaxTools bounds how many distinct tool label values one collector
// set records before it folds new names into Other.
const DefaultMaxTools = 256

// maxToolName matches the specification's limit on tool names.
const maxToolName = 128

// toolGuard keeps the tool label bounded. Tool names are operator
// registered, so the set is small in practice, but a name that reaches the
// host from the network (an unknown tool in a submitted script, a forged
// frame) must not mint a series. Any goroutine may call value; mu guards seen.
type toolGuard struct {
	mu      sync.Mutex
	seen    map[string]struct{}
	allowed map[string]struct{} // nil: any well-formed name up to max
	max     int
	onFirst func(tool string) // runs once per accepted name, under mu
}

func newToolGuard(o options, onFirst func(string)) *toolGuard {
	g := &toolGuard{seen: make(map[string]struct{}), max: o.maxTools, onFirst: onFirst}
	if o.tools != nil {
		g.allowed = make(map[string]struct{}, len(o.tools))
		for _, t := range o.tools {
			if wellFormedTool(t) {
				g.allowed[t] = struct{}{}
			}
		}
	}
	return g
}

// value returns the label value to record for tool.
func (g *toolGuard) value(tool string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.seen[tool]; ok {
		return tool
	}
	if !wellFormedTool(tool) {
		return g.first(Other)
	}
	if g.allowed != nil {
		if _, ok := g.allowed[tool]; !ok {
			return g.first(Other)
		}
	} else if len(g.seen) >= g.max {
		return g.first(Other)
	}
	return g.first(tool)
}

// first records name as seen, initialising its series on first sight so
// that rate() and increase() see the first event as a change from zero.
func (g *toolGuard) first(name string) string {
	if _, ok := g.seen[name]; !ok {
		g.seen[name] = struct{}{}
		if g.onFirst != nil {
			g.onFirst(name)
		}
	}
	return name
}

// wellFormedTool is the specification's tool-name shape: 1..128 bytes of
// dot-separated, non-empty tokens of [A-Za-z0-9_-]. It is repeated here
// because this package imports no other package of the project.
func wellFormedTool(s string) bool {
	if s == "" || len(s) > maxToolName {
		return false
	}
	tokenLen := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			if tokenLen == 0 {
				return false
			}
			tokenLen = 0
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			tokenLen++
		default:
			return false
		}
	}
	return tokenLen > 0
}
