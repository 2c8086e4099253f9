package host

import (
	"encoding/json"
	"fmt"

	"github.com/splashfabric/splashfabric/toolspec"
)

// jsonContract compiles the checks of a JSON tool registered by policy:
// its optional schemas become a definition of its own (without the
// contract an invocation carries; that is RegisterTool's), so every JSON
// tool is checked one way, and an error never quotes the value checked.
func jsonContract(name string, in, out json.RawMessage) (*toolspec.Tool, error) {
	def, err := toolspec.Spec{Name: name, Format: toolspec.FormatJSON, InputSchema: in, OutputSchema: out}.Compile()
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
