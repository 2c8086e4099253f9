package host

import (
	"fmt"

	"github.com/splashfabric/splashfabric/toolspec"
)

// jsonChecks compiles the checks of a local JSON tool, which has no
// definition: a schemaless one of its own, so every JSON tool is checked
// one way (the envelope), and an error never quotes the value checked.
func jsonChecks(name string) (*toolspec.Tool, error) {
	def, err := toolspec.Spec{Name: name, Format: toolspec.FormatJSON}.Compile()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	return def, nil
}

// checkOutput applies the terminal-output checks shared by external
// completion, reconciliation, Pump and Call: the byte limit, then for JSON
// tools the envelope and the contract. The contract's error names where
// the value broke it without quoting it, so no output reaches the audit.
func checkOutput(t *tool, out string) error {
	if limit := t.policy.MaxOutputBytes; len(out) > limit {
		return fmt.Errorf("output is %d bytes, limit %d", len(out), limit)
	}
	if t.format == FormatJSON {
		if err := t.def.ValidateOutput(out); err != nil {
			return err
		}
	}
	return nil
}
