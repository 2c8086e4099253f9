// Package toolspec is the one definition of a tool that hosts and worker
// agents both read, and the catalog file format that holds such
// definitions.
//
// # The catalog format
//
// A catalog is a YAML or JSON document with one key, tools, listing tool
// definitions. Every key is checked: a misspelt one is refused, not
// ignored, because ignoring it would silently drop a limit or a sandbox
// setting. A complete example:
//
//	tools:
//	  # A text tool with every default: one attempt, no deadline,
//	  # results up to 1 MiB, no streaming.
//	  - name: text.upper
//	    description: Upper-cases its input.
//
//	  # A JSON tool with a contract, retries, a deadline and streaming.
//	  - name: demo.sum
//	    description: Adds two integers.
//	    format: json            # "text" (the default) or "json"
//	    input_schema:           # JSON Schema (draft 2020-12 unless $schema says otherwise)
//	      type: object
//	      properties:
//	        a: {type: integer}
//	        b: {type: integer}
//	      required: [a, b]
//	      additionalProperties: false
//	    output_schema: {type: integer}
//	    idempotent: true        # a crashed attempt may simply run again
//	    cancellable: true       # the tool honours cooperative cancellation
//	    max_attempts: 3         # 1..100; default 1
//	    deadline: 30s           # a duration string; 1ms..24h; default none
//	    max_output_bytes: 4096  # 1..1 MiB; default 1 MiB
//	    stream:                 # progress chunks; every bound positive
//	      max_chunks: 100
//	      max_chunk_bytes: 1024
//	      max_source_bytes: 65536
//	      max_released_bytes: 65536
//	    redact:                 # applied by the host, in order, to everything released
//	      - literal: hunter2
//	        replace: "[password]"
//	      - regexp: 'sk-[A-Za-z0-9]{20,}'
//	        replace: "[key]"
//	    process:                # the worker runs the tool as a child process
//	      command: [./sum.py, --strict]   # relative to dir when it has a slash, else found in PATH
//	      dir: tools            # relative to the catalog file's directory (the default)
//	      env:                  # the whole environment, besides SPLASH_TOOL_*
//	        - LANG=C.UTF-8      # sets a variable
//	        - HOME              # passes the worker's own value through
//	      concurrency: 4        # calls in flight per process; 1..1024; default 1
//	      contain:              # the sandbox (the default; contain: false runs it uncontained)
//	        network: false      # the default: no network
//	        ro_binds: [/etc/ssl/certs, ../models]   # "path" or "src:dst"; a relative src is from dir
//	        rw_binds: ["/var/lib/sum:/data"]
//	      limits:               # per sandbox; each left out takes the worker's default
//	        memory: 512MiB      # resident memory of all its processes (default 1GiB)
//	        cpu_seconds: 600    # CPU time of each process over its life (default none)
//	        pids: 64            # processes and threads (default 256)
//	        open_files: 256     # per process (default 1024)
//	        file_size: 64MiB    # largest file it may write (default 1GiB)
//	        tmp_size: 128MiB    # its private /tmp (default 64MiB)
//	      cancel_grace: 5s      # a cancelled call still running then is stopped (default 10s)
//
// Names follow protocol.ValidateToolName and are unique within a catalog.
// Schemas belong to JSON tools only, must be JSON objects (or true or
// false), and must be self-contained: a $ref to anything but the standard
// metaschemas or the schema itself is refused. Environment names are
// [A-Za-z_][A-Za-z0-9_]*, listed once, and never SPLASH_TOOL_*, which the
// worker sets. A redact rule has exactly one of literal or regexp (Go RE2
// syntax, which must not match the empty string); replace is literal text.
//
// YAML is read as YAML 1.1: unquoted y, n, yes, no, on and off are
// booleans, so quote them where a string is meant (replace: "y"). A
// value of the wrong type is refused, never converted.
//
// # Reading a catalog
//
// Load (or Parse, for bytes in hand) decodes a catalog strictly,
// validates every tool and resolves each process directory to an
// absolute path. Catalog.Compile turns it into a Set of Tools, whose
// schemas and redaction rules are compiled once and shared by every
// session. A worker also calls Catalog.CheckCommands to learn at start,
// rather than at the first call, that a command or directory is missing,
// and Catalog.CheckSandboxes to refuse a sandbox that would hold its home
// or one of its secrets (its data directory, key and credential files).
// ParseSpec reads a single definition written as JSON, such as a record
// in a key-value store.
//
//	cat, err := toolspec.Load("/etc/splash/tools.yaml")
//	if err != nil { ... }
//	if err := cat.CheckCommands(); err != nil { ... } // worker only
//	if err := cat.CheckSandboxes(toolspec.Protected{Home: toolspec.HomeDir(), Secrets: []string{keyFile}}); err != nil { ... }
//	set, err := cat.Compile()
//	if err != nil { ... }
//	tool, ok := set.Lookup("demo.sum")
//
// A Set is an immutable snapshot. Set.With overlays one catalog on
// another (a fabric's definitions over a file's) and Set.Without drops
// tools, each returning a new Set.
//
// # The digest
//
// Tool.Digest identifies the contract a host and a worker must agree on:
// name, format, schemas and the limits that shape a call. A host sends it
// with an invocation and a worker compares it with its own, so the two
// sides never keep two vocabularies equal by hand. Descriptions, redact
// rules (the host's alone) and process settings (the worker's alone: how
// the tool runs, not what it does) are outside it.
//
// # Errors
//
// Every fault in a catalog or definition is a *FieldError naming the tool
// and the JSON path of the field, such as
//
//	toolspec: tool "demo.sum": field "stream.max_chunks": out of range: 0 is not between 1 and 1048576
//
// It matches ErrInvalidCatalog and one specific sentinel (ErrUnknownField,
// ErrInvalidName, ErrInvalidSchema, ErrOutOfRange, ErrInvalidValue,
// ErrDuplicateTool, ErrCommandNotFound) with errors.Is. Messages repeat at
// most a short prefix of any value, and never a redact literal, an
// environment value or a tool's input or output, because errors travel
// to logs.
package toolspec
