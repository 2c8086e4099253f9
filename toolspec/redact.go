package toolspec

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// redactor is one compiled RedactRule.
type redactor struct {
	literal string
	re      *regexp.Regexp
	replace string
}

// compile checks r and compiles it. On failure it returns the path suffix
// of the bad field (".literal" or ".regexp", or "" for the rule) and why.
// The literal and the replacement are never quoted: they are usually the
// secrets the rule hides.
func (r RedactRule) compile() (redactor, string, error) {
	switch {
	case r.Literal != "" && r.Regexp != "":
		return redactor{}, "", fmt.Errorf("%w: a rule has either literal or regexp, not both", ErrInvalidValue)
	case r.Literal != "":
		return redactor{literal: r.Literal, replace: r.Replace}, "", nil
	case r.Regexp != "":
		re, err := regexp.Compile(r.Regexp)
		if err != nil {
			return redactor{}, ".regexp", fmt.Errorf("%w: %s", ErrInvalidValue, clip.String(err.Error(), maxMessage))
		}
		// A pattern that matches nothing would insert Replace between
		// every two characters of every output.
		if re.MatchString("") {
			return redactor{}, ".regexp", fmt.Errorf("%w: the pattern matches the empty string", ErrInvalidValue)
		}
		return redactor{re: re, replace: r.Replace}, "", nil
	default:
		return redactor{}, "", fmt.Errorf("%w: a rule needs a non-empty literal or regexp", ErrInvalidValue)
	}
}

func (r redactor) apply(s string) string {
	if r.re != nil {
		return r.re.ReplaceAllLiteralString(s, r.replace)
	}
	return strings.ReplaceAll(s, r.literal, r.replace)
}

// newRedactor chains rules in order, or returns nil for none.
func newRedactor(rules []redactor) func(string) string {
	if len(rules) == 0 {
		return nil
	}
	return func(s string) string {
		for _, r := range rules {
			s = r.apply(s)
		}
		return s
	}
}
