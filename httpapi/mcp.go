package httpapi

import (
	"net/http"
	"time"
)

// mcpHandler lifts the server's read and write deadlines for an MCP
// request: a tools/call answers as a stream of progress notifications
// that lasts as long as the call, and a GET holds the session's
// notification stream open. What bounds them is the MCP session itself
// (its idle timeout) and the call's own deadline.
func mcpHandler(h http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Time{})
		h.ServeHTTP(w, r)
	}
}
