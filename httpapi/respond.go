package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"

	"github.com/splashfabric/splashfabric/internal/clip"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// The status line is out already; a failed write means the client
	// went away and there is nobody left to tell.
	_ = enc.Encode(v)
}

// HeaderSessionHost names, on a 421 session_elsewhere, the host whose
// process drives the session.
const HeaderSessionHost = "Splash-Session-Host"

// retryAfterSeconds is the Retry-After of a 429 or 503: a busy host frees
// sessions as scripts finish, and a draining one is replaced within
// seconds.
const retryAfterSeconds = "1"

// maxMessageBytes bounds a whole error message, whatever a sentinel's
// wrapper put into it.
const maxMessageBytes = 1 << 10

// retryAfter is the Retry-After of err, in whole seconds: its own when
// it knows when the request would be taken (a quota's refill), else
// retryAfterSeconds.
func retryAfter(err error) string {
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) && ra.RetryAfter() > 0 {
		return strconv.FormatInt(int64(math.Ceil(ra.RetryAfter().Seconds())), 10)
	}
	return retryAfterSeconds
}

// writeError answers with err's status and code. The message is err's
// text: sentinels carry the "package: " prefix, which says where the
// refusal came from.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, code := codeFor(err)
	if status == http.StatusInternalServerError {
		s.cfg.Logger.LogAttrs(r.Context(), slog.LevelError, "api request failed",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.String("code", code), slog.String("error", err.Error()))
	}
	switch status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="splash"`)
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		// A busy or draining host may take the request a moment later
		// (or another host may); say when to try again.
		w.Header().Set("Retry-After", retryAfter(err))
	}
	var elsewhere *hostloop.SessionElsewhereError
	if errors.As(err, &elsewhere) {
		// Machine-readable, for a client or proxy that sends the request
		// on to the host that answers.
		w.Header().Set(HeaderSessionHost, elsewhere.Host)
	}
	s.cfg.OnRefused(code)
	detail := apiwire.ErrorDetail{Code: code, Message: clip.String(err.Error(), maxMessageBytes)}
	var scope *ScopeError
	if errors.As(err, &scope) {
		detail.Scope = string(scope.Scope)
	}
	var tool *ToolError
	if errors.As(err, &tool) {
		detail.Tool = clip.String(tool.Pattern, clip.Echo)
	}
	writeJSON(w, status, apiwire.ErrorBody{Error: detail})
}
