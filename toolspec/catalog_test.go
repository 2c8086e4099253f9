package toolspec_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/toolspec"
)

func TestParseRefusesBadCatalogs(t *testing.T) {
	// tool wraps one tool entry's YAML body (indented for a list item).
	tool := func(body string) string { return "tools:\n  - " + strings.ReplaceAll(body, "\n", "\n    ") + "\n" }
	proc := func(body string) string {
		return tool("name: p\nprocess:\n  command: [./run]\n  " + strings.ReplaceAll(body, "\n", "\n  "))
	}
	stream := func(field string, n int) string {
		v := map[string]int{"max_chunks": 10, "max_chunk_bytes": 10, "max_source_bytes": 10, "max_released_bytes": 10}
		v[field] = n
		b, _ := json.Marshal(v)
		return tool("name: s\nstream: " + string(b))
	}
	tests := []struct {
		name      string
		catalog   string
		wantErr   error
		wantTool  string
		wantField string
	}{
		{"not yaml", "tools: [\n", toolspec.ErrInvalidValue, "", ""},
		{"tools not a list", "tools: 5\n", toolspec.ErrInvalidValue, "", "tools"},
		{"entry not an object", "tools: [5]\n", toolspec.ErrInvalidValue, "#0", ""},
		{"unknown top-level field", "tools: []\nversion: 1\n", toolspec.ErrUnknownField, "", "version"},
		{"unknown tool field", tool("name: a\nformt: json"), toolspec.ErrUnknownField, "a", "formt"},
		{"field in the wrong case", tool("name: a\nFormat: json"), toolspec.ErrUnknownField, "a", "Format"},
		{"unknown stream field", tool("name: a\nstream: {max_chunk: 1}"), toolspec.ErrUnknownField, "a", "stream.max_chunk"},
		{"unknown redact field", tool("name: a\nredact: [{literal: x, replace: z, flags: i}]"), toolspec.ErrUnknownField, "a", "redact[0].flags"},
		{"unknown contain field", proc("contain: {netwrk: true}"), toolspec.ErrUnknownField, "p", "process.contain.netwrk"},
		{"contain without process", tool("name: a\ncontain: {network: true}"), toolspec.ErrUnknownField, "a", "contain"},
		{"contain without command", tool("name: a\nprocess: {contain: {network: true}}"), toolspec.ErrInvalidValue, "a", "process.command"},
		{"illegal name", tool("name: a b"), toolspec.ErrInvalidName, "#0", "name"},
		{"illegal name later", "tools:\n  - name: ok\n  - name: 'x.*'\n", toolspec.ErrInvalidName, "#1", "name"},
		{"missing name", tool("description: nameless"), toolspec.ErrInvalidName, "#0", "name"},
		{"name not a string", tool("name: 5"), toolspec.ErrInvalidValue, "#0", "name"},
		{"bad format", tool("name: a\nformat: xml"), toolspec.ErrInvalidValue, "a", "format"},
		{"schema on a text tool", tool("name: a\noutput_schema: {type: string}"), toolspec.ErrInvalidSchema, "a", "output_schema"},
		{"schema on an explicit text tool", tool("name: a\nformat: text\ninput_schema: {type: string}"), toolspec.ErrInvalidSchema, "a", "input_schema"},
		{"schema not an object", tool("name: a\nformat: json\ninput_schema: [1]"), toolspec.ErrInvalidSchema, "a", "input_schema"},
		{"schema a string", tool("name: a\nformat: json\ninput_schema: object"), toolspec.ErrInvalidSchema, "a", "input_schema"},
		{"schema breaks the metaschema", tool("name: a\nformat: json\ninput_schema: {type: nonsense}"), toolspec.ErrInvalidSchema, "a", "input_schema"},
		{"schema with a bad pattern", tool("name: a\nformat: json\noutput_schema: {pattern: '(x'}"), toolspec.ErrInvalidSchema, "a", "output_schema"},
		{"schema with an external ref", tool("name: a\nformat: json\ninput_schema: {$ref: 'file:///etc/passwd'}"), toolspec.ErrInvalidSchema, "a", "input_schema"},
		{"attempts negative", tool("name: a\nmax_attempts: -1"), toolspec.ErrOutOfRange, "a", "max_attempts"},
		{"attempts too many", tool("name: a\nmax_attempts: 101"), toolspec.ErrOutOfRange, "a", "max_attempts"},
		{"attempts fractional", tool("name: a\nmax_attempts: 1.5"), toolspec.ErrInvalidValue, "a", "max_attempts"},
		{"negative deadline", tool("name: a\ndeadline: -5s"), toolspec.ErrOutOfRange, "a", "deadline"},
		{"deadline too long", tool("name: a\ndeadline: 25h"), toolspec.ErrOutOfRange, "a", "deadline"},
		{"deadline too short", tool("name: a\ndeadline: 10us"), toolspec.ErrOutOfRange, "a", "deadline"},
		{"number as deadline", tool("name: a\ndeadline: 30"), toolspec.ErrInvalidValue, "a", "deadline"},
		{"deadline not a duration", tool("name: a\ndeadline: soon"), toolspec.ErrInvalidValue, "a", "deadline"},
		{"output limit negative", tool("name: a\nmax_output_bytes: -1"), toolspec.ErrOutOfRange, "a", "max_output_bytes"},
		{"output limit too big", tool("name: a\nmax_output_bytes: 1048577"), toolspec.ErrOutOfRange, "a", "max_output_bytes"},
		{"stream chunks zero", stream("max_chunks", 0), toolspec.ErrOutOfRange, "s", "stream.max_chunks"},
		{"stream chunks too many", stream("max_chunks", 1<<20+1), toolspec.ErrOutOfRange, "s", "stream.max_chunks"},
		{"stream chunk bytes too big", stream("max_chunk_bytes", 1<<20+1), toolspec.ErrOutOfRange, "s", "stream.max_chunk_bytes"},
		{"stream source bytes negative", stream("max_source_bytes", -1), toolspec.ErrOutOfRange, "s", "stream.max_source_bytes"},
		{"stream released bytes too big", stream("max_released_bytes", 64<<20+1), toolspec.ErrOutOfRange, "s", "stream.max_released_bytes"},
		{"stream bound missing", tool("name: s\nstream: {max_chunks: 1}"), toolspec.ErrOutOfRange, "s", "stream.max_chunk_bytes"},
		{"redact both", tool("name: a\nredact: [{literal: x, regexp: q, replace: z}]"), toolspec.ErrInvalidValue, "a", "redact[0]"},
		{"redact neither", tool("name: a\nredact: [{replace: z}]"), toolspec.ErrInvalidValue, "a", "redact[0]"},
		{"redact bad regexp", tool("name: a\nredact: [{literal: x, replace: z}, {regexp: '(x', replace: z}]"), toolspec.ErrInvalidValue, "a", "redact[1].regexp"},
		{"redact regexp matching nothing", tool("name: a\nredact: [{regexp: 'x*', replace: z}]"), toolspec.ErrInvalidValue, "a", "redact[0].regexp"},
		{"empty command", tool("name: a\nprocess: {command: []}"), toolspec.ErrInvalidValue, "a", "process.command"},
		{"missing command", tool("name: a\nprocess: {dir: x}"), toolspec.ErrInvalidValue, "a", "process.command"},
		{"empty argument", tool("name: a\nprocess: {command: [run, '']}"), toolspec.ErrInvalidValue, "a", "process.command[1]"},
		{"argument not a string", tool("name: a\nprocess: {command: [run, 3]}"), toolspec.ErrInvalidValue, "a", "process.command[1]"},
		{"bad env name", proc("env: ['1X=y']"), toolspec.ErrInvalidValue, "p", "process.env[0]"},
		{"env name with a dash", proc("env: [A, B-C]"), toolspec.ErrInvalidValue, "p", "process.env[1]"},
		{"env reserved", proc("env: [SPLASH_TOOL_KEY_FD=4]"), toolspec.ErrInvalidValue, "p", "process.env[0]"},
		{"env twice", proc("env: [A=1, A]"), toolspec.ErrInvalidValue, "p", "process.env[1]"},
		{"concurrency negative", proc("concurrency: -1"), toolspec.ErrOutOfRange, "p", "process.concurrency"},
		{"concurrency too high", proc("concurrency: 1025"), toolspec.ErrOutOfRange, "p", "process.concurrency"},
		{"bind of root", proc("contain: {ro_binds: [/]}"), toolspec.ErrUnsafeBind, "p", "process.contain.ro_binds[0]"},
		{"bind of root by another name", proc("contain: {rw_binds: ['/usr/..']}"), toolspec.ErrUnsafeBind, "p", "process.contain.rw_binds[0]"},
		{"bind onto root", proc("contain: {ro_binds: ['/opt/x:/']}"), toolspec.ErrUnsafeBind, "p", "process.contain.ro_binds[0]"},
		{"contained in /", proc("dir: /"), toolspec.ErrUnsafeBind, "p", "process.dir"},
		{"contain a string", proc("contain: 'yes'"), toolspec.ErrInvalidValue, "p", "process.contain"},
		{"contain a number", proc("contain: 1"), toolspec.ErrInvalidValue, "p", "process.contain"},
		{"limits uncontained", proc("contain: false\nlimits: {memory: 64MiB}"), toolspec.ErrInvalidValue, "p", "process.limits"},
		{"unknown limit", proc("limits: {memry: 64MiB}"), toolspec.ErrUnknownField, "p", "process.limits.memry"},
		{"memory too small", proc("limits: {memory: 1MiB}"), toolspec.ErrOutOfRange, "p", "process.limits.memory"},
		{"memory not a size", proc("limits: {memory: lots}"), toolspec.ErrInvalidValue, "p", "process.limits.memory"},
		{"memory in unknown units", proc("limits: {memory: 64XB}"), toolspec.ErrInvalidValue, "p", "process.limits.memory"},
		{"memory negative", proc("limits: {memory: -1}"), toolspec.ErrOutOfRange, "p", "process.limits.memory"},
		{"pids too few", proc("limits: {pids: 2}"), toolspec.ErrOutOfRange, "p", "process.limits.pids"},
		{"cpu negative", proc("limits: {cpu_seconds: -1}"), toolspec.ErrOutOfRange, "p", "process.limits.cpu_seconds"},
		{"tmp too big", proc("limits: {tmp_size: 1TiB}"), toolspec.ErrOutOfRange, "p", "process.limits.tmp_size"},
		{"grace too long", proc("cancel_grace: 2h"), toolspec.ErrOutOfRange, "p", "process.cancel_grace"},
		{"grace a number", proc("cancel_grace: 10"), toolspec.ErrInvalidValue, "p", "process.cancel_grace"},
		{"relative bind destination", proc("contain: {rw_binds: ['/a:b']}"), toolspec.ErrInvalidValue, "p", "process.contain.rw_binds[0]"},
		{"bind with two colons", proc("contain: {rw_binds: ['/a:/b:/c']}"), toolspec.ErrInvalidValue, "p", "process.contain.rw_binds[0]"},
		{"duplicate tool", "tools:\n  - name: a\n  - name: b\n  - name: a\n", toolspec.ErrDuplicateTool, "a", "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat, err := toolspec.Parse([]byte(tt.catalog), t.TempDir())
			if err == nil {
				t.Fatalf("Parse accepted:\n%s\ngot %+v", tt.catalog, cat)
			}
			if !errors.Is(err, toolspec.ErrInvalidCatalog) || !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v; want ErrInvalidCatalog and %v", err, tt.wantErr)
			}
			var fe *toolspec.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a *FieldError", err)
			}
			if fe.Tool != tt.wantTool || fe.Field != tt.wantField {
				t.Fatalf("tool %q field %q; want %q %q (%v)", fe.Tool, fe.Field, tt.wantTool, tt.wantField, err)
			}
			msg := err.Error()
			if tt.wantTool != "" && !strings.Contains(msg, `tool "`+tt.wantTool+`"`) {
				t.Errorf("message %q does not name tool %q", msg, tt.wantTool)
			}
			if tt.wantField != "" && !strings.Contains(msg, `field "`+tt.wantField+`"`) {
				t.Errorf("message %q does not name field %q", msg, tt.wantField)
			}
		})
	}
}

func TestParseErrorsDoNotEchoSecrets(t *testing.T) {
	long := strings.Repeat("x", 500)
	tests := []struct {
		name    string
		catalog string
		secret  string
	}{
		{"redact literal", "tools:\n  - name: a\n    redact: [{literal: hunter2-secret, regexp: 'y', replace: z}]\n", "hunter2-secret"},
		{"redact replacement", "tools:\n  - name: a\n    redact: [{replace: hunter2-secret}]\n", "hunter2-secret"},
		{"env value", "tools:\n  - name: a\n    process: {command: [x], env: ['1A=hunter2-secret']}\n", "hunter2-secret"},
		{"env value of a reserved name", "tools:\n  - name: a\n    process: {command: [x], env: ['SPLASH_TOOL_X=hunter2-secret']}\n", "hunter2-secret"},
		{"long name", "tools:\n  - name: '" + long + "'\n", long[:maxEchoed+1]},
		{"long unknown key", "tools:\n  - name: a\n    " + long + ": 1\n", long[:maxEchoed+1]},
		{"long format", "tools:\n  - name: a\n    format: " + long + "\n", long[:maxEchoed+1]},
		{"long bind", "tools:\n  - name: a\n    process: {command: [x], contain: {ro_binds: ['/" + long + ":rel']}}\n", long[:maxEchoed+1]},
		{"long size", "tools:\n  - name: a\n    process: {command: [x], limits: {memory: '1" + long + "'}}\n", long[:maxEchoed+1]},
		{"long deadline", "tools:\n  - name: a\n    deadline: " + long + "\n", long[:maxEchoed+1]},
		{"long regexp", "tools:\n  - name: a\n    redact: [{regexp: '(" + long + "', replace: z}]\n", long[:maxEchoed+1]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := toolspec.Parse([]byte(tt.catalog), ".")
			if err == nil {
				t.Fatal("Parse accepted the catalog")
			}
			if strings.Contains(err.Error(), tt.secret) {
				t.Fatalf("message echoes %q: %v", tt.secret, err)
			}
		})
	}
}

// maxEchoed bounds how much of a value a message may repeat.
const maxEchoed = 100

func TestParseYAMLAndJSONAgree(t *testing.T) {
	fromYAML, err := toolspec.Load(filepath.Join("testdata", "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := toolspec.Load(filepath.Join("testdata", "full.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromYAML, fromJSON) {
		t.Fatalf("YAML and JSON forms differ:\n%+v\n%+v", fromYAML, fromJSON)
	}
	sum := fromYAML.Tools[1]
	wantDir, _ := filepath.Abs(filepath.Join("testdata", "tools"))
	if sum.Process.Dir != wantDir {
		t.Errorf("process dir %q; want %q", sum.Process.Dir, wantDir)
	}
	if time.Duration(sum.Deadline) != 30*time.Second || sum.MaxAttempts != 3 || sum.Stream.MaxChunks != 100 {
		t.Errorf("fields not decoded: %+v", sum)
	}
	if _, err := fromYAML.Compile(); err != nil {
		t.Fatal(err)
	}
}

func TestParseProcessDir(t *testing.T) {
	base := t.TempDir()
	tests := []struct {
		name, dir, want string
	}{
		{"default", "", base},
		{"relative", "sub/dir", filepath.Join(base, "sub", "dir")},
		{"absolute", "/opt/tools/../bin", "/opt/bin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := "tools:\n  - name: a\n    process: {command: [x], dir: '" + tt.dir + "'}\n"
			cat, err := toolspec.Parse([]byte(y), base)
			if err != nil {
				t.Fatal(err)
			}
			if got := cat.Tools[0].Process.Dir; got != tt.want {
				t.Fatalf("dir %q; want %q", got, tt.want)
			}
		})
	}
}

// Relative bind sources are resolved against the process's directory,
// as its command and environment paths are.
func TestParseResolvesRelativeBinds(t *testing.T) {
	base := t.TempDir()
	y := "tools:\n  - name: a\n    process: {command: [x], dir: tools/a, contain: {ro_binds: [../../sdk, '/abs'], rw_binds: ['out:/out']}}\n"
	cat, err := toolspec.Parse([]byte(y), base)
	if err != nil {
		t.Fatal(err)
	}
	c := cat.Tools[0].Process.Contain
	if want := []string{filepath.Join(base, "sdk"), "/abs"}; !reflect.DeepEqual(c.ROBinds, want) {
		t.Errorf("ro_binds %q, want %q", c.ROBinds, want)
	}
	if want := []string{filepath.Join(base, "tools", "a", "out") + ":/out"}; !reflect.DeepEqual(c.RWBinds, want) {
		t.Errorf("rw_binds %q, want %q", c.RWBinds, want)
	}
}

// contain is an object, true (the default sandbox) or false (none); left
// out, a process is contained.
func TestParseContainForms(t *testing.T) {
	for _, tc := range []struct {
		contain string
		want    *toolspec.Contain
		enabled bool
	}{
		{"", nil, true},
		{"contain: true", &toolspec.Contain{}, true},
		{"contain: {}", &toolspec.Contain{}, true},
		{"contain: {network: true}", &toolspec.Contain{Network: true}, true},
		{"contain: false", &toolspec.Contain{Disabled: true}, false},
	} {
		t.Run(tc.contain, func(t *testing.T) {
			y := "tools:\n  - name: a\n    process:\n      command: [x]\n      " + tc.contain + "\n"
			cat, err := toolspec.Parse([]byte(y), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			p := cat.Tools[0].Process
			if !reflect.DeepEqual(p.Contain, tc.want) || p.Contain.Enabled() != tc.enabled {
				t.Fatalf("contain %+v enabled %v, want %+v %v", p.Contain, p.Contain.Enabled(), tc.want, tc.enabled)
			}
			b, err := json.Marshal(cat.Tools[0])
			if err != nil {
				t.Fatal(err)
			}
			back, err := toolspec.ParseSpec(b)
			if err != nil || !reflect.DeepEqual(back.Process.Contain, tc.want) {
				t.Fatalf("round trip through %s: %+v (%v)", b, back.Process, err)
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	y := "tools:\n  - name: a\n    process:\n      command: [x]\n      cancel_grace: 3s\n      limits: {memory: 256MiB, cpu_seconds: 60, pids: 64, open_files: 128, file_size: 10MB, tmp_size: '1Gi'}\n"
	cat, err := toolspec.Parse([]byte(y), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := cat.Tools[0].Process
	want := toolspec.Limits{Memory: 256 << 20, CPUSeconds: 60, Pids: 64, OpenFiles: 128, FileSize: 10e6, TmpSize: 1 << 30}
	if *p.Limits != want || time.Duration(p.CancelGrace) != 3*time.Second {
		t.Fatalf("limits %+v grace %v, want %+v 3s", *p.Limits, p.CancelGrace, want)
	}
}

func TestParseEmptyCatalogs(t *testing.T) {
	for _, doc := range []string{"", "tools: []\n", "{}", "tools:\n", "# nothing\n"} {
		cat, err := toolspec.Parse([]byte(doc), ".")
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if len(cat.Tools) != 0 {
			t.Fatalf("%q: %d tools", doc, len(cat.Tools))
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := toolspec.Load(filepath.Join(t.TempDir(), "absent.yaml"))
	if !errors.Is(err, os.ErrNotExist) || errors.Is(err, toolspec.ErrInvalidCatalog) {
		t.Fatalf("error %v; want not-exist and not invalid catalog", err)
	}
}

func TestParseSpecRoundTrip(t *testing.T) {
	cat, err := toolspec.Load(filepath.Join("testdata", "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range cat.Tools {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := toolspec.ParseSpec(b)
		if err != nil {
			t.Fatalf("ParseSpec(%s): %v", b, err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("round trip changed the spec:\n%+v\n%+v", s, got)
		}
	}
	// The catalog itself round-trips through Parse as JSON.
	b, err := json.Marshal(cat)
	if err != nil {
		t.Fatal(err)
	}
	again, err := toolspec.Parse(b, "/elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, cat) {
		t.Fatalf("catalog round trip changed:\n%+v\n%+v", cat, again)
	}
}

func TestParseSpecRefuses(t *testing.T) {
	tests := []struct {
		name      string
		json      string
		wantErr   error
		wantField string
	}{
		{"not json", `{"name":"a"`, toolspec.ErrInvalidValue, ""},
		{"trailing data", `{"name":"a"} {}`, toolspec.ErrInvalidValue, ""},
		{"yaml is not json", "name: a", toolspec.ErrInvalidValue, ""},
		{"unknown field", `{"name":"a","extra":1}`, toolspec.ErrUnknownField, "extra"},
		{"number as deadline", `{"name":"a","deadline":30}`, toolspec.ErrInvalidValue, "deadline"},
		{"bad name", `{"name":"a..b"}`, toolspec.ErrInvalidName, "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := toolspec.ParseSpec([]byte(tt.json))
			var fe *toolspec.FieldError
			if !errors.Is(err, toolspec.ErrInvalidCatalog) || !errors.Is(err, tt.wantErr) || !errors.As(err, &fe) {
				t.Fatalf("error %v; want a FieldError matching %v", err, tt.wantErr)
			}
			if fe.Field != tt.wantField {
				t.Fatalf("field %q; want %q", fe.Field, tt.wantField)
			}
		})
	}
}

func TestDurationJSON(t *testing.T) {
	b, err := json.Marshal(toolspec.Spec{Name: "a", Deadline: toolspec.Duration(90 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"a","deadline":"1m30s"}`; string(b) != want {
		t.Fatalf("got %s; want %s", b, want)
	}
	b, _ = json.Marshal(toolspec.Spec{Name: "a"})
	if want := `{"name":"a"}`; string(b) != want {
		t.Fatalf("zero deadline: got %s; want %s", b, want)
	}
}
