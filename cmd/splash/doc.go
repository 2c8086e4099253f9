// Command splash runs Splash Fabric: the host, the worker pool and the
// embedded NATS node, in one process (dev) or apart.
//
// One binary serves every role; the first argument picks it:
//
//	splash dev                          # everything in one process, on loopback
//	splash nats --cluster-name c --cluster-port 6222 \
//	    --routes nats-route://nats-1:6222,nats-route://nats-2:6222
//	splash host --nats-url nats://nats-1:4222 --key-file /run/secrets/frame-key
//	splash worker --nats-url nats://nats-1:4222 --key-file ... --tools echo,upper
//	splash run script.js                # or: splash run -e 'source'
//	splash ops --watch
//	splash cancel <session> <operation>
//	splash healthcheck --url http://127.0.0.1:8080/healthz
//	splash version
//
// Every flag has an environment variable, listed by `splash <command>
// --help`; a flag beats its variable, which beats the default, and an empty
// variable counts as unset. Variables that mean the same thing in several
// commands (SPLASH_NATS_URL, SPLASH_KEY_FILE, SPLASH_API_TOKEN,
// SPLASH_API_ADDR, SPLASH_METRICS_ADDR, SPLASH_LOG_FORMAT, ...) share one
// name; the others are SPLASH_<COMMAND>_<FLAG>. docs/cli.md lists them all.
//
// Exit statuses: 0 for success and for --help, 1 when the work failed, 2 for
// a mistake in the command line or environment (usage is printed to
// stderr). Logs go to stderr through log/slog, as text or, with
// --log-format json, one JSON object a line; stdout is kept for a command's
// own output.
//
// The package holds only wiring: flag parsing, logging and process
// lifetime (signals). What a command does belongs to the packages it calls.
// Each command lives in its own cmd_<name>.go: a command value for the
// dispatcher, a config struct that declares its flags, and a run method.
package main
