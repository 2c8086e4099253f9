package host

import (
	"fmt"
	"unicode/utf8"
)

// An external tool's input travels to its worker inside one sealed frame,
// as a JSON string (text) or as JSON text (a JSON tool). A transport
// cannot carry a frame over its largest message, and a publish it refuses
// would be retried until the operation's deadline, or forever without
// one, with the script waiting on a call no worker can take. The runtime
// refuses such an input at the start instead, before the call takes any
// of the session's budget.

// inputFits refuses an external tool's input longer than MaxInputBytes as
// JSON text. The refusal is audited as a denial.
func (r *Runtime) inputFits(name, in string) error {
	t := r.tools[name]
	if r.maxInput <= 0 || t == nil || !t.external {
		return nil
	}
	// Escaping at most sextuples a byte; shorter inputs need no count.
	if len(in) <= (r.maxInput-2)/6 {
		return nil
	}
	n := jsonTextBytes(in, t.format == FormatJSON)
	if n <= r.maxInput {
		return nil
	}
	err := fmt.Errorf("%w: %q takes %d bytes on the wire, the most a tool input may is %d", ErrInputTooLarge, name, n, r.maxInput)
	r.recordTool(name, AuditDenied, err.Error())
	return err
}

// jsonTextBytes is how long s can be once encoded: as a JSON string
// (quoted, escaped) for text, as it is for JSON text whose strings an
// encoder may escape further. Every escape is counted at its longest
// form (\u00XX), including the <, > and & an HTML-safe encoder escapes,
// and invalid UTF-8 as the \ufffd it becomes, so no encoder writes more.
func jsonTextBytes(s string, isJSON bool) int {
	n := 0
	if !isJSON {
		n = 2
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c < 0x20, c == '<', c == '>', c == '&':
				n += 6
			case (c == '"' || c == '\\') && !isJSON:
				n += 2
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
