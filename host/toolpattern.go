package host

import (
	"fmt"
	"strings"

	"github.com/splashfabric/splashfabric/protocol"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// Tool patterns name the tools a session may call. They are NATS subject
// filters over tool names, since tool names are subject tokens
// (splash.invoke.<tool>): segments are separated by dots, "*" stands for
// exactly one segment and ">", only as the last segment, for one or more.
// "demo.*" matches demo.echo but not demo.json.sum; "demo.>" matches both;
// ">" alone matches every tool. Any other segment is a literal, legal as
// a tool-name token.
const (
	// PatternOne matches exactly one segment of a tool name.
	PatternOne = "*"
	// PatternRest, as a pattern's last segment, matches one or more
	// segments.
	PatternRest = ">"
)

// ToolPattern is a parsed tool pattern. The zero value matches nothing.
type ToolPattern struct {
	text string
	segs []string
}

// ParseToolPattern parses a tool pattern; a malformed one is refused with
// ErrInvalidToolPattern.
func ParseToolPattern(s string) (ToolPattern, error) {
	if s == "" || len(s) > protocol.MaxToolNameBytes {
		return ToolPattern{}, fmt.Errorf("%w: %d bytes: %q", ErrInvalidToolPattern, len(s), clip.String(s, protocol.MaxToolNameBytes))
	}
	segs := strings.Split(s, ".")
	for i, seg := range segs {
		switch {
		case seg == PatternOne:
		case seg == PatternRest && i == len(segs)-1:
		case seg == PatternRest:
			return ToolPattern{}, fmt.Errorf("%w: %q: %q may only end a pattern", ErrInvalidToolPattern, s, PatternRest)
		default:
			if err := protocol.ValidateToolName(seg); err != nil {
				return ToolPattern{}, fmt.Errorf("%w: %q: segment %d is not a name token, %q or %q", ErrInvalidToolPattern, s, i+1, PatternOne, PatternRest)
			}
		}
	}
	return ToolPattern{text: s, segs: segs}, nil
}

// String returns the pattern as written.
func (p ToolPattern) String() string { return p.text }

// Match reports whether tool is one of the tools p names.
func (p ToolPattern) Match(tool string) bool {
	if len(p.segs) == 0 {
		return false
	}
	rest := tool
	for i, seg := range p.segs {
		if seg == PatternRest {
			return rest != ""
		}
		part, after, more := strings.Cut(rest, ".")
		if part == "" || (seg != PatternOne && seg != part) {
			return false
		}
		last := i == len(p.segs)-1
		if !more || last {
			return !more && last
		}
		rest = after
	}
	return false
}

// Covers reports whether every tool q matches, p matches too: a token
// whose pattern is p may hand q to a session.
func (p ToolPattern) Covers(q ToolPattern) bool {
	if len(p.segs) == 0 || len(q.segs) == 0 {
		return false
	}
	for i, seg := range p.segs {
		if seg == PatternRest {
			return i < len(q.segs)
		}
		if i >= len(q.segs) {
			return false
		}
		switch qs := q.segs[i]; {
		case qs == PatternRest:
			return false // q reaches names of any length; p does not
		case seg == PatternOne:
		case seg != qs:
			return false
		}
	}
	return len(q.segs) == len(p.segs)
}

// ToolPatterns is a list of tool patterns: a tool is in it when any one
// matches. Nil stands for every tool (no restriction), an empty list for
// none.
type ToolPatterns []ToolPattern

// ParseToolPatterns parses each of ss; nil gives nil (every tool), an
// empty list an empty one (no tool). The first malformed pattern is
// refused with ErrInvalidToolPattern, naming its index.
func ParseToolPatterns(ss []string) (ToolPatterns, error) {
	if ss == nil {
		return nil, nil
	}
	out := make(ToolPatterns, 0, len(ss))
	for i, s := range ss {
		p, err := ParseToolPattern(s)
		if err != nil {
			return nil, fmt.Errorf("pattern %d: %w", i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// All reports whether ps stands for every tool.
func (ps ToolPatterns) All() bool { return ps == nil }

// Match reports whether tool is among the tools ps names.
func (ps ToolPatterns) Match(tool string) bool {
	if ps == nil {
		return true
	}
	for _, p := range ps {
		if p.Match(tool) {
			return true
		}
	}
	return false
}

// Covers reports whether one of ps covers q (see ToolPattern.Covers). A
// pattern that only the union of several would cover is not covered: the
// check errs on the side of refusing.
func (ps ToolPatterns) Covers(q ToolPattern) bool {
	if ps == nil {
		return len(q.segs) > 0
	}
	for _, p := range ps {
		if p.Covers(q) {
			return true
		}
	}
	return false
}

// Strings returns the patterns as written; nil for every tool.
func (ps ToolPatterns) Strings() []string {
	if ps == nil {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.text
	}
	return out
}
