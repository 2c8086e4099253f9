package toolspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// schemaURL is the name a schema is compiled under. Validation errors name
// locations relative to it.
const schemaURL = "mem:///schema.json"

// noLoader refuses every external reference. A catalog's schemas must be
// self-contained: the default loader would read any file:// URL a $ref
// names, and a schema's meaning must not depend on the machine reading it.
// The standard metaschemas are built into the library and still resolve.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, errors.New("external references are not allowed")
}

// compileSchema compiles one of a JSON tool's schemas. The error is the
// reason alone; the caller adds tool and field.
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	if !json.Valid(raw) {
		return nil, fmt.Errorf("%w: not one JSON value", ErrInvalidSchema)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: not one JSON value", ErrInvalidSchema)
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		return nil, fmt.Errorf("%w: want an object or a boolean, got %s", ErrInvalidSchema, jsonKind(raw))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidSchema, describeCompileError(err))
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidSchema, describeCompileError(err))
	}
	return s, nil
}

// describeCompileError words a compile failure. A schema that breaks its
// metaschema is described by its first detailed cause, which points into
// the schema, rather than by the library's whole tree.
func describeCompileError(err error) string {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		return clip.String(firstLeaf(ve).Error(), maxMessage)
	}
	return clip.String(err.Error(), maxMessage)
}

func firstLeaf(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(e.Causes) > 0 {
		e = e.Causes[0]
	}
	return e
}

// validatePayload checks that s is one JSON value matching schema (if
// any). which is "input" or "output". The error names schema locations
// only: the library's own messages quote the value, and a value can be a
// secret.
func validatePayload(schema *jsonschema.Schema, s, which string) error {
	if !json.Valid([]byte(s)) {
		return fmt.Errorf("%w: %s is not one JSON value", ErrInvalidPayload, which)
	}
	if schema == nil {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if err != nil {
		return fmt.Errorf("%w: %s is not one JSON value", ErrInvalidPayload, which)
	}
	err = schema.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("%w: %s does not match the %s schema", ErrInvalidPayload, which, which)
	}
	return fmt.Errorf("%w: %s does not match the %s schema at %s", ErrInvalidPayload, which, which, keywordLocations(ve))
}

// keywordLocations lists where in the schema the failing keywords are,
// such as "#/properties/n/type", at most a few of them.
func keywordLocations(root *jsonschema.ValidationError) string {
	const most = 3
	var locs []string
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := keywordLocation(e)
			if !seen[loc] {
				seen[loc] = true
				locs = append(locs, loc)
			}
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(root)
	if len(locs) > most {
		return strings.Join(locs[:most], ", ") + fmt.Sprintf(" and %d more", len(locs)-most)
	}
	return strings.Join(locs, ", ")
}

// keywordLocation is the schema location of e's keyword, relative to the
// tool's schema when it lies inside it.
func keywordLocation(e *jsonschema.ValidationError) string {
	var b strings.Builder
	b.WriteString(strings.TrimPrefix(e.SchemaURL, schemaURL))
	for _, tok := range e.ErrorKind.KeywordPath() {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return clip.String(b.String(), clip.Echo)
}
