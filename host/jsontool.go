package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compileSchema compiles a tool's JSON Schema contract at registration; a
// nil schema means no contract.
func compileSchema(tool, which string, raw json.RawMessage) (*jsonschema.Schema, error) {
	if raw == nil {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %q %s schema is not JSON: %v", ErrInvalidInput, tool, which, err)
	}
	url := "mem:///" + tool + "/" + which + ".json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("%w: %q %s schema: %v", ErrInvalidInput, tool, which, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("%w: %q %s schema: %v", ErrInvalidInput, tool, which, err)
	}
	return s, nil
}

var errNotJSON = errors.New("not a valid JSON value")

// validateJSON checks that s is one JSON value and, with a schema, that
// it matches the contract.
func validateJSON(schema *jsonschema.Schema, s string) error {
	if !json.Valid([]byte(s)) {
		return errNotJSON
	}
	if schema == nil {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if err != nil {
		return err
	}
	if err := schema.Validate(v); err != nil {
		return fmt.Errorf("does not match the contract: %v", err)
	}
	return nil
}

// checkOutput applies the terminal-output checks shared by external
// completion, reconciliation, Pump and Call: the byte limit, then for JSON
// tools the envelope and the contract.
func checkOutput(t *tool, out string) error {
	if limit := t.policy.MaxOutputBytes; len(out) > limit {
		return fmt.Errorf("output is %d bytes, limit %d", len(out), limit)
	}
	if t.format == FormatJSON {
		validate := func(s string) error { return validateJSON(t.outSchema, s) }
		if t.def != nil {
			// The definition's check names where the value broke the
			// contract without quoting it, so no output reaches the audit.
			validate = t.def.ValidateOutput
		}
		if err := validate(out); err != nil {
			return fmt.Errorf("output %v", err)
		}
	}
	return nil
}
