package toolspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// Contain is the sandbox a process or an MCP server runs in. A catalog
// writes it as an object (the sandbox with these settings), as true (the
// default sandbox, the same as leaving it out) or as false (no sandbox:
// the process runs as the worker's own child, with the worker's user, its
// file system and its view of /proc).
type Contain struct {
	// Disabled runs the process without a sandbox; it is written
	// `contain: false` and excludes every other field.
	Disabled bool `json:"-"`
	// Network grants the network; the default is none.
	Network bool `json:"network,omitempty"`
	// ROBinds are read-only binds, each "path" or "src:dst". A relative
	// src is resolved against the process's directory; dst is absolute.
	ROBinds []string `json:"ro_binds,omitempty"`
	// RWBinds are read-write binds, in the same form.
	RWBinds []string `json:"rw_binds,omitempty"`
}

// Enabled reports whether c asks for a sandbox: a nil Contain does, as
// does any that is not Disabled.
func (c *Contain) Enabled() bool { return c == nil || !c.Disabled }

// MarshalJSON writes a disabled sandbox as false and any other as an
// object.
func (c Contain) MarshalJSON() ([]byte, error) {
	if c.Disabled {
		return []byte("false"), nil
	}
	type plain Contain
	return json.Marshal(plain(c))
}

// UnmarshalJSON reads true, false or an object, for readers that do not go
// through Parse (which refuses unknown keys besides).
func (c *Contain) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case "true":
		*c = Contain{}
		return nil
	case "false":
		*c = Contain{Disabled: true}
		return nil
	}
	type plain Contain
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("%w: contain is true, false or an object, not %s", ErrInvalidValue, jsonKind(b))
	}
	*c = Contain(p)
	return nil
}

// decodeStrictValue is Parse's reading of a contain value: the two
// booleans, or an object whose every key is checked.
func (c *Contain) decodeStrictValue(raw []byte, path string) *decodeError {
	switch string(raw) {
	case "true":
		*c = Contain{}
		return nil
	case "false":
		*c = Contain{Disabled: true}
		return nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		return &decodeError{path, fmt.Errorf("%w: contain is true, false or an object, not %s", ErrInvalidValue, jsonKind(raw))}
	}
	return decodeObject(raw, reflect.ValueOf(c).Elem(), path)
}

func (c *Contain) clone() *Contain {
	if c == nil {
		return nil
	}
	d := *c
	d.ROBinds = cloneStrings(c.ROBinds)
	d.RWBinds = cloneStrings(c.RWBinds)
	return &d
}

// Limits bounds what a contained process may use. A zero field takes the
// worker's default (docs/catalog.md lists them); the worker says in its
// log whether a cgroup or rlimits enforce them.
type Limits struct {
	// Memory bounds the resident memory of all the tool's processes
	// together.
	Memory ByteSize `json:"memory,omitempty"`
	// CPUSeconds bounds the CPU time of each process over its life; 0
	// means no bound (a process serves many calls; a call's deadline
	// and the worker's maximum runtime bound one call).
	CPUSeconds int `json:"cpu_seconds,omitempty"`
	// Pids bounds the processes and threads of the tool.
	Pids int `json:"pids,omitempty"`
	// OpenFiles bounds the open files of each process.
	OpenFiles int `json:"open_files,omitempty"`
	// FileSize bounds the size of any file a process writes.
	FileSize ByteSize `json:"file_size,omitempty"`
	// TmpSize bounds the sandbox's private /tmp (and /dev/shm, each).
	TmpSize ByteSize `json:"tmp_size,omitempty"`
}

// Bounds of Limits fields other than zero.
const (
	MinMemory     = 16 << 20
	MaxMemory     = 1 << 40
	MaxCPUSeconds = 1<<31 - 1
	MinPids       = 16
	MaxPids       = 1 << 16
	MinOpenFiles  = 16
	MaxOpenFiles  = 1 << 20
	MinFileSize   = 4 << 10
	MaxFileSize   = 1 << 50
	MinTmpSize    = 1 << 20
	MaxTmpSize    = 64 << 30
)

// Bounds of CancelGrace other than zero.
const (
	MinCancelGrace = 10 * time.Millisecond
	MaxCancelGrace = time.Hour
)

func (l *Limits) clone() *Limits {
	if l == nil {
		return nil
	}
	d := *l
	return &d
}

// check returns the key of the first field out of its bounds and why.
func (l *Limits) check() (string, error) {
	for _, b := range []struct {
		field  string
		n      int64
		lo, hi int64
	}{
		{"memory", int64(l.Memory), MinMemory, MaxMemory},
		{"cpu_seconds", int64(l.CPUSeconds), 1, MaxCPUSeconds},
		{"pids", int64(l.Pids), MinPids, MaxPids},
		{"open_files", int64(l.OpenFiles), MinOpenFiles, MaxOpenFiles},
		{"file_size", int64(l.FileSize), MinFileSize, MaxFileSize},
		{"tmp_size", int64(l.TmpSize), MinTmpSize, MaxTmpSize},
	} {
		if b.n != 0 && (b.n < b.lo || b.n > b.hi) {
			return b.field, fmt.Errorf("%w: %d is not 0 (the default) or between %d and %d", ErrOutOfRange, b.n, b.lo, b.hi)
		}
	}
	return "", nil
}

// ByteSize is a number of bytes, written in a catalog as an integer or as
// a string with a unit: "64MiB", "1GiB", "512Ki", "10MB" (B; k, M, G, T
// and kB, MB, GB, TB count in powers of 1000; Ki, Mi, Gi, Ti with or
// without a trailing B in powers of 1024).
type ByteSize int64

// MarshalJSON writes the number of bytes.
func (b ByteSize) MarshalJSON() ([]byte, error) { return []byte(strconv.FormatInt(int64(b), 10)), nil }

// UnmarshalJSON reads an integer or a size string. Range checks are the
// field's.
func (b *ByteSize) UnmarshalJSON(raw []byte) error {
	var n int64
	if err := json.Unmarshal(raw, &n); err == nil {
		if n < 0 {
			return fmt.Errorf("%w: a size is not negative", ErrOutOfRange)
		}
		*b = ByteSize(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("%w: a size is an integer or a string such as \"64MiB\", not %s", ErrInvalidValue, jsonKind(raw))
	}
	v, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

var sizeUnits = map[string]int64{
	"": 1, "B": 1,
	"k": 1e3, "kB": 1e3, "M": 1e6, "MB": 1e6, "G": 1e9, "GB": 1e9, "T": 1e12, "TB": 1e12,
	"Ki": 1 << 10, "KiB": 1 << 10, "Mi": 1 << 20, "MiB": 1 << 20, "Gi": 1 << 30, "GiB": 1 << 30, "Ti": 1 << 40, "TiB": 1 << 40,
}

func parseByteSize(s string) (ByteSize, error) {
	bad := fmt.Errorf("%w: %q is not a size such as \"64MiB\"", ErrInvalidValue, clip.String(s, clip.Echo))
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && '0' <= t[i] && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, bad
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	unit, ok := sizeUnits[strings.TrimSpace(t[i:])]
	if err != nil || !ok {
		return 0, bad
	}
	if n > (1<<62)/unit {
		return 0, fmt.Errorf("%w: %q is too large", ErrOutOfRange, clip.String(s, clip.Echo))
	}
	return ByteSize(n * unit), nil
}

// checkSandbox checks, for a contained process, what needs no machine:
// its binds parse, none of them is the whole file system, its directory
// is not /, and limits and grace are in range. For an uncontained one it
// refuses the settings that only a sandbox gives.
func (p *Process) checkSandbox() (string, error) {
	if d := time.Duration(p.CancelGrace); d != 0 && (d < MinCancelGrace || d > MaxCancelGrace) {
		return "cancel_grace", fmt.Errorf("%w: %s is not between %s and %s", ErrOutOfRange, d, MinCancelGrace, MaxCancelGrace)
	}
	if !p.Contain.Enabled() {
		if p.Limits != nil {
			return "limits", fmt.Errorf("%w: limits are the sandbox's; contain: false runs without either", ErrInvalidValue)
		}
		return "", nil
	}
	if p.Limits != nil {
		if field, err := p.Limits.check(); err != nil {
			return "limits." + field, err
		}
	}
	if p.Dir != "" && filepath.Clean(p.Dir) == "/" {
		return "dir", fmt.Errorf("%w: a contained tool's directory is bound into its sandbox, and / is the whole file system: give the tool a directory of its own", ErrUnsafeBind)
	}
	return p.Contain.eachBind(func(src, dst string) error {
		if filepath.Clean(src) == "/" || filepath.Clean(dst) == "/" {
			return fmt.Errorf("%w: a bind of / would give the tool the whole file system (or hide its own)", ErrUnsafeBind)
		}
		return nil
	})
}

// eachBind calls f with the source and destination of each of c's binds,
// read-only ones first; it returns the field of the first bind that does
// not parse or that f refuses, with the error. A nil c has none.
func (c *Contain) eachBind(f func(src, dst string) error) (string, error) {
	if c == nil {
		return "", nil
	}
	for _, binds := range []struct {
		field string
		list  []string
	}{{"ro_binds", c.ROBinds}, {"rw_binds", c.RWBinds}} {
		for i, b := range binds.list {
			src, dst, err := parseBind(b)
			if err == nil {
				err = f(src, dst)
			}
			if err != nil {
				return "contain." + binds.field + "[" + strconv.Itoa(i) + "]", err
			}
		}
	}
	return "", nil
}

// resolveBinds makes the relative sources of c's binds absolute against
// dir, the process's resolved directory, as its relative paths are.
func resolveBinds(c *Contain, dir string) {
	if c == nil {
		return
	}
	for _, list := range []*[]string{&c.ROBinds, &c.RWBinds} {
		for i, b := range *list {
			src, dst, found := strings.Cut(b, ":")
			if src == "" || filepath.IsAbs(src) || strings.IndexByte(b, 0) >= 0 {
				continue // left for check to refuse or keep
			}
			abs := filepath.Join(dir, src)
			if found {
				(*list)[i] = abs + ":" + dst
			} else {
				(*list)[i] = abs
			}
		}
	}
}
