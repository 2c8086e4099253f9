package toolspec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"sigs.k8s.io/yaml"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// Catalog is a list of tool definitions as read from a file or written to
// one. Parse and Load return catalogs whose every Spec is valid and whose
// names are unique.
type Catalog struct {
	Tools []Spec `json:"tools"`
}

// Parse reads a catalog written in YAML or JSON (JSON being YAML). Every
// key must be one the format defines, at any depth. A Process.Dir is
// resolved against baseDir, which is also its default, so every Dir in
// the result is absolute; a relative bind source is resolved against the
// resolved Dir. Every tool is validated (without looking for
// its command) and a name defined twice is refused.
//
// Every failure is a *FieldError naming the tool (or "#N" for the entry
// at index N when its name is unusable) and the field.
func Parse(data []byte, baseDir string) (*Catalog, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fieldErr("", "", fmt.Errorf("%w: not a YAML or JSON document: %s", ErrInvalidValue, clip.String(err.Error(), maxMessage)))
	}
	var doc struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if derr := decodeStrict(js, &doc); derr != nil {
		return nil, fieldErr("", derr.field, derr.err)
	}
	c := &Catalog{Tools: make([]Spec, 0, len(doc.Tools))}
	seen := make(map[string]int, len(doc.Tools))
	for i, raw := range doc.Tools {
		tool := label(entryName(raw), "#"+strconv.Itoa(i))
		var s Spec
		if derr := decodeStrict(raw, &s); derr != nil {
			return nil, fieldErr(tool, derr.field, derr.err)
		}
		if s.Process != nil {
			if s.Process.Dir, err = resolveDir(baseDir, s.Process.Dir); err != nil {
				return nil, fieldErr(tool, "process.dir", err)
			}
			resolveBinds(s.Process.Contain, s.Process.Dir)
		}
		if s.MCP != nil {
			if s.MCP.Dir, err = resolveDir(baseDir, s.MCP.Dir); err != nil {
				return nil, fieldErr(tool, "mcp.dir", err)
			}
			resolveBinds(s.MCP.Contain, s.MCP.Dir)
		}
		if _, ferr := s.check(tool); ferr != nil {
			return nil, ferr
		}
		if j, dup := seen[s.Name]; dup {
			return nil, fieldErr(tool, "name", fmt.Errorf("%w: also defined by the entry at index %d", ErrDuplicateTool, j))
		}
		seen[s.Name] = i
		c.Tools = append(c.Tools, s)
	}
	return c, nil
}

// entryName reads an entry's name leniently, so that any later fault in
// the entry can be reported under it.
func entryName(raw json.RawMessage) string {
	var e struct {
		Name any `json:"name"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return ""
	}
	name, _ := e.Name.(string)
	return name
}

// resolveDir makes a process's directory absolute against the catalog's.
func resolveDir(baseDir, dir string) (string, error) {
	base, err := filepath.Abs(baseDir)
	if err != nil {
		return "", fmt.Errorf("%w: cannot resolve the catalog directory: %s", ErrInvalidValue, clip.String(err.Error(), maxMessage))
	}
	if dir == "" {
		return base, nil
	}
	if filepath.IsAbs(dir) {
		return filepath.Clean(dir), nil
	}
	return filepath.Join(base, dir), nil
}

// Load reads and parses the catalog file at path; relative process
// directories are resolved against the file's own directory. A file that
// cannot be read is reported with the os error wrapped (so
// errors.Is(err, fs.ErrNotExist) works), not as an invalid catalog.
func Load(path string) (*Catalog, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("toolspec: %w", err)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("toolspec: %w", err)
	}
	return Parse(data, filepath.Dir(abs))
}

// ParseSpec reads one tool definition written as JSON, such as a record
// in a key-value store, with the same strictness and validation as Parse.
// A Process.Dir is kept as written. json.Marshal of a valid Spec always
// reads back through ParseSpec to an equal Spec.
func ParseSpec(data []byte) (Spec, error) {
	if !json.Valid(data) {
		return Spec{}, fieldErr("", "", fmt.Errorf("%w: not one JSON value", ErrInvalidValue))
	}
	tool := label(entryName(data), "")
	var s Spec
	if derr := decodeStrict(data, &s); derr != nil {
		return Spec{}, fieldErr(tool, derr.field, derr.err)
	}
	if _, ferr := s.check(tool); ferr != nil {
		return Spec{}, ferr
	}
	return s, nil
}

// Compile compiles every tool of c into a Set.
func (c *Catalog) Compile() (*Set, error) {
	tools := make([]*Tool, 0, len(c.Tools))
	for _, s := range c.Tools {
		t, err := s.Compile()
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return NewSet(tools...)
}
