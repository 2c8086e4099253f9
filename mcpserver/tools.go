package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/splashfabric/splashfabric/toolspec"
)

// mapping is how one catalog tool looks as an MCP tool: MCP arguments
// are always a JSON object, so a tool whose input is not one takes it
// under "input", and a JSON result that is not an object goes out under
// "result".
type mapping struct {
	tool *toolspec.Tool
	// wrapInput: the input is arguments.input rather than the arguments.
	wrapInput bool
	// wrapResult: the structured result is {"result": value}; structured
	// is false when the tool has no structured result at all (text
	// tools).
	wrapResult, structured bool
}

// mcpTool describes t as an MCP tool, and how its calls map.
func mcpTool(t *toolspec.Tool) (*mcp.Tool, mapping) {
	s := t.Spec()
	m := mapping{tool: t}
	out := &mcp.Tool{Name: s.Name, Description: s.Description}
	if s.Format != toolspec.FormatJSON {
		m.wrapInput = true
		out.InputSchema = wrapSchema("input", json.RawMessage(`{"type":"string"}`))
		return out, m
	}
	m.structured = true
	switch {
	case isObjectSchema(s.InputSchema):
		out.InputSchema = s.InputSchema
	default:
		m.wrapInput = true
		out.InputSchema = wrapSchema("input", orTrue(s.InputSchema))
	}
	switch {
	case s.OutputSchema == nil:
		// Without a contract the result may be any value: it goes out
		// as text, and as structured content when it is an object.
	case isObjectSchema(s.OutputSchema):
		out.OutputSchema = s.OutputSchema
	default:
		m.wrapResult = true
		out.OutputSchema = wrapSchema("result", s.OutputSchema)
	}
	return out, m
}

// wrapSchema is an object schema with one required property.
func wrapSchema(name string, schema json.RawMessage) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"type":                 "object",
		"properties":           map[string]json.RawMessage{name: schema},
		"required":             []string{name},
		"additionalProperties": false,
	})
	return b
}

func orTrue(schema json.RawMessage) json.RawMessage {
	if schema == nil {
		return json.RawMessage(`true`)
	}
	return schema
}

// isObjectSchema reports a schema that admits only JSON objects, which
// MCP takes as is.
func isObjectSchema(schema json.RawMessage) bool {
	var s struct {
		Type any `json:"type"`
	}
	return schema != nil && json.Unmarshal(schema, &s) == nil && s.Type == "object"
}

// script builds the one-call session's source for a call with args.
func (m mapping) script(args json.RawMessage) (string, error) {
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage(`{}`)
	}
	input := args
	if m.wrapInput {
		var w struct {
			Input json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(args, &w); err != nil || w.Input == nil {
			return "", fmt.Errorf("arguments must be an object with an %q property", "input")
		}
		input = w.Input
	}
	name, _ := json.Marshal(m.tool.Name())
	if m.tool.Format() != toolspec.FormatJSON {
		var text string
		if err := json.Unmarshal(input, &text); err != nil {
			return "", fmt.Errorf("%q must be a string", "input")
		}
		// A JSON string is a JavaScript string literal, so the input
		// cannot escape it.
		return fmt.Sprintf("return await tool.start(%s, %s);", name, input), nil
	}
	if !json.Valid(input) {
		return "", fmt.Errorf("arguments are not JSON")
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, input)
	// A script's value is text for a primitive and JSON for an object;
	// stringifying makes it JSON for every value.
	return fmt.Sprintf("return JSON.stringify(await tool.start_json(%s, (%s)));", name, compact.String()), nil
}

// result turns a session's outcome into the call's result.
func (m mapping) result(o Outcome) *mcp.CallToolResult {
	if o.Failed {
		return errorResult(fmt.Sprintf("%s failed: %s", m.tool.Name(), o.Error))
	}
	if !m.structured {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: o.Value}}}
	}
	value := json.RawMessage(o.Value)
	if len(value) == 0 {
		value = json.RawMessage(`null`)
	}
	r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(value)}}}
	switch {
	case m.wrapResult:
		r.StructuredContent = map[string]json.RawMessage{"result": value}
	case strings.HasPrefix(string(bytes.TrimSpace(value)), "{"):
		r.StructuredContent = value
	}
	return r
}

// errorResult is a failed call, told to the caller as a tool error (which
// a model can read and act on) rather than a protocol error.
func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
