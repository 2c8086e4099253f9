package mcpserver

import "errors"

// Errors of the package, matched with errors.Is.
var (
	// ErrInvalidConfig reports a Config New cannot serve: no runner, no
	// catalog, or a tool to expose that the catalog does not define.
	ErrInvalidConfig = errors.New("mcpserver: invalid config")
	// ErrUnknownTool reports, wrapped in ErrInvalidConfig, a name in
	// Config.Expose that the catalog does not define.
	ErrUnknownTool = errors.New("mcpserver: unknown tool")
	// ErrLostSession reports a session the runner lost track of: the
	// host forgot it or stopped answering for it.
	ErrLostSession = errors.New("mcpserver: session lost")
)
