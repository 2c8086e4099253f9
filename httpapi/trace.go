package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
	"github.com/splashfabric/splashfabric/tracing"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// submissionScope is the instrumentation scope of the API's spans.
const submissionScope = "github.com/splashfabric/splashfabric/httpapi"

// traceSubmission starts the span of a submission, in the trace the
// request's traceparent names (a client's, trusted for nothing else), and
// names it as the session's trace. Without a Tracer it does nothing.
func (s *server) traceSubmission(r *http.Request, sub *hostloop.Submission) (context.Context, trace.Span) {
	if s.cfg.Tracer == nil {
		return r.Context(), nil
	}
	ctx := tracing.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := s.cfg.Tracer.Tracer(submissionScope).Start(ctx, "POST /v1/sessions",
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", http.MethodPost), attribute.String("url.path", "/v1/sessions")))
	sub.Trace = tracing.TraceParent(span.SpanContext())
	return ctx, span
}

// endSubmission ends a submission's span with the session it made.
func endSubmission(span trace.Span, st hostloop.SessionStatus, err error) {
	if span == nil {
		return
	}
	if err != nil {
		// The error's kind, not its text: a refused script's message
		// can quote the script.
		_, code := codeFor(err)
		span.SetStatus(codes.Error, code)
	} else {
		span.SetAttributes(tracing.AttrSession.String(string(st.ID)))
	}
	span.End()
}

// sessionOf is the wire form of st with its trace's URL, when the server
// has one.
func (s *server) sessionOf(st hostloop.SessionStatus) apiwire.Session {
	out := sessionOf(st)
	if out.TraceID != "" && s.cfg.TraceURL != "" {
		out.TraceURL = strings.ReplaceAll(s.cfg.TraceURL, "{trace_id}", out.TraceID)
	}
	return out
}

// CheckTraceURL refuses a trace URL the console could not link to: it
// must be an absolute http or https URL.
func CheckTraceURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: trace URL %s, want an absolute http or https URL", ErrInvalidField, clip.Quote(raw, clip.Echo))
	}
	return nil
}
