// Package apiclient is a typed client of the host HTTP API (docs/api.md):
// submit a script, follow its events, read its state and audit log, list
// and cancel live operations. `splash run`, `splash ops` and `splash
// cancel` are built on it.
//
//	c, err := apiclient.New("http://127.0.0.1:8080", os.Getenv("SPLASH_API_TOKEN"))
//	s, err := c.Submit(ctx, apiclient.SubmitRequest{Source: src})
//	stream, err := c.Events(ctx, s.ID)
//	defer stream.Close()
//	for {
//		ev, err := stream.Next()
//		if errors.Is(err, io.EOF) {
//			break // the terminal state was the previous event
//		}
//		if errors.Is(err, apiclient.ErrStreamEnded) {
//			// lagged or disconnected: poll c.Session(ctx, s.ID) instead
//		}
//		switch ev.Kind {
//		case apiclient.EventChunk: // ev.Chunk.Text
//		case apiclient.EventState: // ev.State.State, ev.State.Value
//		}
//	}
//
// An error answer of the host is an *Error carrying the HTTP status and
// the API's code and message; errors.Is matches it against the sentinels
// by status class (ErrUnauthorized, ErrForbidden, ErrNotFound,
// ErrConflict, ErrRejected, ...) or by code (ErrUnknownSession,
// ErrUnknownOperation, ErrMissingScope, ErrToolNotPermitted; the last two
// name the scope or tool in Error.Scope and Error.Tool). A refusal for
// now says when to try again in Error.RetryAfter: ErrTooManyRequests (429:
// the host is full, or ErrQuota, the token's owner is over one of its
// quotas, Error.Code naming it) and ErrMemoryPressure (503). A host that
// cannot be reached gives ErrUnreachable; a cancelled context gives its
// own error.
//
// A submission asks for its session's tool call budget and pending limit
// (SubmitRequest.ToolCallBudget, MaxPending; `splash run --budget
// --pending`); zero takes the host's defaults.
//
// The request and response types are httpapi's wire types, aliased, so
// the client and the server cannot drift apart. Package apitest serves the
// API over a real host loop with an in-memory worker pool, for tests of
// code that uses this client.
package apiclient
