package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/splashfabric/splashfabric/internal/logattr"
)

// logFlags are the flags every command has: how it logs.
type logFlags struct {
	format string
	level  string
}

func (l *logFlags) register(fs *flagSet) {
	fs.stringVar(&l.format, "log-format", envLogFormat, "text", "log `format`: text or json")
	fs.stringVar(&l.level, "log-level", envLogLevel, "info", "minimum log `level`: debug, info, warn or error")
}

// logger builds the process logger. Logs go to stderr so that stdout stays
// the command's output (a script's chunks, a version string) for pipes. A
// key is written once a record: the command, the worker agent and a tool's
// supervisor each name what they log for.
func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, fmt.Errorf("%w: --log-level %q", errUsage, l.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch l.format {
	case "text":
		return slog.New(logattr.Unique(slog.NewTextHandler(w, opts))), nil
	case "json":
		return slog.New(logattr.Unique(slog.NewJSONHandler(w, opts))), nil
	default:
		return nil, fmt.Errorf("%w: --log-format %q, want text or json", errUsage, l.format)
	}
}
