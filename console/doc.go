// Package console is the operator console a host serves at /ui/: three
// static files (an HTML page, its script and its style sheet) embedded in
// the binary, so the page works with no network beyond the host and no
// build step.
//
// The files hold nothing secret and are served without a token. The page
// asks the operator for the host's API token once, keeps it in the
// browser's session storage, and sends it as a bearer header on every call
// to the /v1 API, the event streams included (read with fetch, since
// EventSource cannot send a header). It never puts the token in a URL.
//
// Every value the page shows comes from scripts and tools, so it is
// written as text, never as markup, and Handler serves the files under a
// Content-Security-Policy that allows no inline script or style and no
// other origin:
//
//	mux.Handle("GET /ui/", console.Handler())
//
// httpapi.Config.UI takes the same handler.
package console
