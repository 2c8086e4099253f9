package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/splashfabric/splashfabric/console"
)

// The console is a handler like any other; a host mounts it at /ui/.
func ExampleHandler() {
	mux := http.NewServeMux()
	mux.Handle("GET "+console.Prefix, console.Handler())
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ui/", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	fmt.Println(rec.Header().Get("X-Content-Type-Options"))
	// Output:
	// 200 text/html; charset=utf-8
	// nosniff
}
