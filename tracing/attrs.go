package tracing

import "go.opentelemetry.io/otel/attribute"

// Attribute keys that host and worker spans share, so one query finds a
// call on both sides. They carry identifiers, counts and sizes, never an
// input, a chunk or an error's text.
const (
	AttrSession   = attribute.Key("splash.session.id")
	AttrResumed   = attribute.Key("splash.session.resumed")
	AttrState     = attribute.Key("splash.session.state")
	AttrOperation = attribute.Key("splash.operation.id")
	AttrRequest   = attribute.Key("splash.request.id")
	AttrTool      = attribute.Key("splash.tool")
	AttrCallIndex = attribute.Key("splash.call.index")
	AttrAttempt   = attribute.Key("splash.attempt")
	AttrOutcome   = attribute.Key("splash.outcome")
	AttrWorker    = attribute.Key("splash.worker.id")
	AttrBytes     = attribute.Key("splash.bytes")
)
