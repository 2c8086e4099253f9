//go:build tools

// Package deps pins the project's chosen dependencies in go.mod before
// every package that uses them exists.
package deps

import (
	_ "github.com/cenkalti/backoff/v4"
	_ "github.com/dop251/goja"
	_ "github.com/nats-io/nats-server/v2/server"
	_ "github.com/nats-io/nats.go"
	_ "github.com/nats-io/nats.go/jetstream"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/common/expfmt"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "go.uber.org/goleak"
)
