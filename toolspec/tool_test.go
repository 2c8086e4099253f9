package toolspec_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/toolspec"
)

func fullSpec() toolspec.Spec {
	return toolspec.Spec{
		Name:         "demo.sum",
		Format:       toolspec.FormatJSON,
		InputSchema:  json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"integer"}`),
		Stream:       &toolspec.StreamPolicy{MaxChunks: 1, MaxChunkBytes: 1, MaxSourceBytes: 1, MaxReleasedBytes: 1},
		Redact:       []toolspec.RedactRule{{Literal: "k", Replace: "x"}},
		Process: &toolspec.Process{
			Command: []string{"sum", "-v"},
			Env:     []string{"A=1"},
			Contain: &toolspec.Contain{ROBinds: []string{"/usr"}, RWBinds: []string{"/tmp"}},
		},
	}
}

func TestToolSpecDefaults(t *testing.T) {
	tool, err := toolspec.Spec{Name: "text.upper", Process: &toolspec.Process{Command: []string{"up"}}}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	got := tool.Spec()
	if got.Format != toolspec.FormatText || got.MaxAttempts != 1 || got.MaxOutputBytes != toolspec.DefaultMaxOutputBytes || got.Process.Concurrency != 1 {
		t.Fatalf("defaults not filled: %+v %+v", got, got.Process)
	}
	if tool.Name() != "text.upper" || tool.Format() != toolspec.FormatText || tool.InputSchema() != nil || tool.OutputSchema() != nil {
		t.Fatal("accessors disagree with the spec")
	}
}

func TestToolSpecIsACopy(t *testing.T) {
	src := fullSpec()
	tool, err := src.Compile()
	if err != nil {
		t.Fatal(err)
	}
	want := tool.Spec()
	mutate := func(s toolspec.Spec) {
		s.InputSchema[0] = 'X'
		s.OutputSchema[0] = 'X'
		s.Stream.MaxChunks = 99
		s.Redact[0].Literal = "changed"
		s.Process.Command[0] = "rm"
		s.Process.Env[0] = "B=2"
		s.Process.Contain.ROBinds[0] = "/"
		s.Process.Contain.RWBinds[0] = "/"
		s.Process.Contain.Network = true
		s.Process.Dir = "/"
	}
	mutate(tool.Spec()) // a copy handed out
	mutate(src)         // the spec it was compiled from
	if got := tool.Spec(); !reflect.DeepEqual(got, want) {
		t.Fatalf("tool changed through a copy:\n%+v\n%+v", got, want)
	}
	if got := tool.Redactor()("k"); got != "x" {
		t.Fatalf("redactor changed: %q", got)
	}
}

// TestToolSummaryAgreesWithSpec pins Summary to the fields of Spec it
// names, defaults included, and shows its stream policy is a copy.
func TestToolSummaryAgreesWithSpec(t *testing.T) {
	for _, src := range []toolspec.Spec{
		fullSpec(),
		{Name: "text.upper", Description: "upper", Idempotent: true, Cancellable: true, MaxAttempts: 3, Deadline: toolspec.Duration(toolspec.MinDeadline), MaxOutputBytes: 10},
	} {
		t.Run(src.Name, func(t *testing.T) {
			tool, err := src.Compile()
			if err != nil {
				t.Fatal(err)
			}
			s, sum := tool.Spec(), tool.Summary()
			want := toolspec.Summary{
				Name: s.Name, Description: s.Description, Format: s.Format,
				Idempotent: s.Idempotent, Cancellable: s.Cancellable,
				MaxAttempts: s.MaxAttempts, Deadline: s.Deadline, MaxOutputBytes: s.MaxOutputBytes, Stream: s.Stream,
			}
			if !reflect.DeepEqual(sum, want) {
				t.Fatalf("summary %+v, spec says %+v", sum, want)
			}
			if sum.Stream != nil {
				sum.Stream.MaxChunks = 99
				if tool.Summary().Stream.MaxChunks == 99 {
					t.Fatal("the tool changed through its summary")
				}
			}
		})
	}
}

func TestValidatePayload(t *testing.T) {
	tool, err := toolspec.Spec{
		Name:         "demo.sum",
		Format:       toolspec.FormatJSON,
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"pattern":"^x"}},"required":["a"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"integer"}`),
	}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	const secret = "hunter2-secret"
	tests := []struct {
		name     string
		validate func(string) error
		value    string
		wantErr  error
		wantLoc  string
	}{
		{"good input", tool.ValidateInput, `{"a":1}`, nil, ""},
		{"good output", tool.ValidateOutput, `42`, nil, ""},
		{"input not json", tool.ValidateInput, `{"a":` + secret, toolspec.ErrInvalidPayload, ""},
		{"input two values", tool.ValidateInput, `{"a":1} {"a":2}`, toolspec.ErrInvalidPayload, ""},
		{"input wrong type", tool.ValidateInput, `{"a":"` + secret + `"}`, toolspec.ErrInvalidPayload, "#/properties/a/type"},
		{"input bad pattern", tool.ValidateInput, `{"a":1,"b":"` + secret + `"}`, toolspec.ErrInvalidPayload, "#/properties/b/pattern"},
		{"input extra key", tool.ValidateInput, `{"a":1,"` + secret + `":1}`, toolspec.ErrInvalidPayload, "#/additionalProperties"},
		{"output wrong type", tool.ValidateOutput, `"` + secret + `"`, toolspec.ErrInvalidPayload, "#/type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.validate(tt.value)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("error %v; want %v", err, tt.wantErr)
			}
			if err == nil {
				return
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error quotes the value: %v", err)
			}
			if !strings.Contains(err.Error(), tt.wantLoc) {
				t.Fatalf("error %v does not name %s", err, tt.wantLoc)
			}
		})
	}
}

func TestValidatePayloadTextAndSchemaless(t *testing.T) {
	text, _ := toolspec.Spec{Name: "t"}.Compile()
	if err := text.ValidateInput("not json"); err != nil {
		t.Fatalf("text tool refused text: %v", err)
	}
	if err := text.ValidateOutput("not json"); err != nil {
		t.Fatalf("text tool refused text: %v", err)
	}
	js, _ := toolspec.Spec{Name: "j", Format: toolspec.FormatJSON}.Compile()
	if err := js.ValidateOutput(`{"any":["thing"]}`); err != nil {
		t.Fatalf("schemaless json tool refused json: %v", err)
	}
	if err := js.ValidateOutput(`nope`); !errors.Is(err, toolspec.ErrInvalidPayload) {
		t.Fatalf("schemaless json tool accepted non-JSON: %v", err)
	}
}

func TestBooleanSchemas(t *testing.T) {
	tool, err := toolspec.Spec{Name: "b", Format: toolspec.FormatJSON, InputSchema: json.RawMessage(`true`), OutputSchema: json.RawMessage(`false`)}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if err := tool.ValidateInput(`[1]`); err != nil {
		t.Fatalf("true schema refused: %v", err)
	}
	if err := tool.ValidateOutput(`1`); !errors.Is(err, toolspec.ErrInvalidPayload) {
		t.Fatalf("false schema accepted: %v", err)
	}
}

func TestValidateAndCompileAgree(t *testing.T) {
	bad := toolspec.Spec{Name: "a", MaxAttempts: 1000}
	verr := bad.Validate()
	_, cerr := bad.Compile()
	if !errors.Is(verr, toolspec.ErrOutOfRange) || !errors.Is(cerr, toolspec.ErrOutOfRange) {
		t.Fatalf("Validate %v, Compile %v; want ErrOutOfRange from both", verr, cerr)
	}
	if err := fullSpec().Validate(); err != nil {
		t.Fatalf("valid spec refused: %v", err)
	}
	var fe *toolspec.FieldError
	if !errors.As(toolspec.Spec{Name: "bad name"}.Validate(), &fe) || fe.Tool != "" || fe.Field != "name" {
		t.Fatalf("unnamed spec error %+v; want tool \"\" field \"name\"", fe)
	}
}

// TestToolConcurrentUse runs the shared parts of one Tool from many
// goroutines, for the race detector.
func TestToolConcurrentUse(t *testing.T) {
	tool, err := toolspec.Spec{
		Name:        "c",
		Format:      toolspec.FormatJSON,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		Redact:      []toolspec.RedactRule{{Regexp: `\d+`, Replace: "#"}},
	}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	for i := 0; i < 8; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := 0; j < 100; j++ {
				_ = tool.ValidateInput(`{"n":"x"}`)
				_ = tool.Redactor()("a1b22")
				_ = tool.Spec()
			}
		}()
	}
	for i := 0; i < 8; i++ {
		<-done
	}
}

// A tool's pool is where it runs, not what it does: it defaults to the
// tool's own name, must be a legal tool name, and leaves the digest alone.
func TestToolPool(t *testing.T) {
	alone, err := toolspec.Spec{Name: "demo.upper"}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	grouped, err := toolspec.Spec{Name: "demo.upper", Pool: "text"}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if alone.Pool() != "demo.upper" || grouped.Pool() != "text" {
		t.Fatalf("pools %q, %q", alone.Pool(), grouped.Pool())
	}
	if alone.Digest() != grouped.Digest() {
		t.Fatal("the pool changed the digest")
	}
	_, err = toolspec.Spec{Name: "demo.upper", Pool: "no spaces"}.Compile()
	var fe *toolspec.FieldError
	if !errors.As(err, &fe) || fe.Field != "pool" || !errors.Is(err, toolspec.ErrInvalidName) {
		t.Fatalf("illegal pool: %v", err)
	}
	cat, err := toolspec.Parse([]byte("tools:\n  - name: a.b\n    pool: text\n"), t.TempDir())
	if err != nil || cat.Tools[0].Pool != "text" {
		t.Fatalf("Parse = %+v, %v", cat, err)
	}
}

// TestCompileRefusesBadDefinitions: Compile is the one door to a host's
// or a worker's registry, so what they used to refuse at registration
// is refused here, with the field that is wrong.
func TestCompileRefusesBadDefinitions(t *testing.T) {
	tests := []struct {
		name      string
		spec      toolspec.Spec
		wantErr   error
		wantField string
	}{
		{"bad name", toolspec.Spec{Name: "bad name"}, toolspec.ErrInvalidName, "name"},
		{"negative attempts", toolspec.Spec{Name: "a", MaxAttempts: -1}, toolspec.ErrOutOfRange, "max_attempts"},
		{"deadline under the wire's resolution", toolspec.Spec{Name: "a", Deadline: toolspec.Duration(time.Microsecond)}, toolspec.ErrOutOfRange, "deadline"},
		{"output limit over a message", toolspec.Spec{Name: "a", MaxOutputBytes: toolspec.MaxOutputBytesLimit + 1}, toolspec.ErrOutOfRange, "max_output_bytes"},
		{"zero stream bound", toolspec.Spec{Name: "a", Stream: &toolspec.StreamPolicy{MaxChunks: 1, MaxSourceBytes: 1, MaxReleasedBytes: 1}}, toolspec.ErrOutOfRange, "stream.max_chunk_bytes"},
		{"schema not JSON", toolspec.Spec{Name: "a", Format: toolspec.FormatJSON, InputSchema: json.RawMessage(`{`)}, toolspec.ErrInvalidSchema, "input_schema"},
		{"schema breaks the metaschema", toolspec.Spec{Name: "a", Format: toolspec.FormatJSON, OutputSchema: json.RawMessage(`{"type":12}`)}, toolspec.ErrInvalidSchema, "output_schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, err := tt.spec.Compile()
			var fe *toolspec.FieldError
			if tool != nil || !errors.Is(err, tt.wantErr) || !errors.As(err, &fe) || fe.Field != tt.wantField {
				t.Fatalf("Compile = %v, %v; want a FieldError on %q matching %v", tool, err, tt.wantField, tt.wantErr)
			}
		})
	}
}
