package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
)

// A submission answers 201 with the new session; a request without the
// token gets the JSON error body.
func ExampleNew() {
	events := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{})
	backend := newFakeBackend(events) // a *hostloop.Loop in a real process
	srv := httptest.NewServer(httpapi.New(backend, httpapi.Config{Token: "t0ken", Events: events}))
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/sessions", strings.NewReader(`{"source":"await tool.start('echo','hi')"}`))
	req.Header.Set("Authorization", "Bearer t0ken")
	resp, err := srv.Client().Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Location"))

	resp, err = srv.Client().Get(srv.URL + "/v1/operations")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.StatusCode, " ", string(body))
	// Output:
	// 201 /v1/sessions/s-1
	// 401 {
	//   "error": {
	//     "code": "missing_token",
	//     "message": "httpapi: missing bearer token"
	//   }
	// }
}

// A listener that serves one connection at a time answers a second one
// with 503 connection_limit, without handing it to the server.
func ExampleLimitListener() {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	l := httpapi.LimitListener(inner, 1, func(code string) { fmt.Println("refused:", code) })
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept() // the first connection
		if err == nil {
			accepted <- c
		}
		_, _ = l.Accept() // refuses the second, then waits for Close
	}()

	first, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		panic(err)
	}
	defer first.Close()
	held := <-accepted
	defer held.Close()
	second, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		panic(err)
	}
	defer second.Close()
	resp, err := http.ReadResponse(bufio.NewReader(second), nil)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.Contains(string(body), `"connection_limit"`))
	// Output:
	// refused: connection_limit
	// 503 true
}

// A SessionIndex observes the loop beside the Broadcaster and lists the
// host's recent sessions, filtered by state.
func ExampleSessionIndex() {
	events := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{})
	index := httpapi.NewSessionIndex(httpapi.IndexConfig{})
	backend := newFakeBackend(httpapi.Tee(events, index)) // a *hostloop.Loop in a real process
	srv := httptest.NewServer(httpapi.New(backend, httpapi.Config{Token: "t0ken", Events: events, Index: index}))
	defer srv.Close()

	call := func(method, path, body string) string {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer t0ken")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		var out struct {
			Sessions []apiwire.SessionSummary `json:"sessions"`
			Source   string                   `json:"source"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		if out.Source != "" {
			return out.Source
		}
		var lines []string
		for _, s := range out.Sessions {
			lines = append(lines, fmt.Sprintf("%s %s %v", s.ID, s.State, s.Tools))
		}
		return strings.Join(lines, "; ")
	}
	call(http.MethodPost, "/v1/sessions", `{"source":"await tool.start('echo','a')"}`)
	call(http.MethodPost, "/v1/sessions", `{"source":"await tool.start('echo','b')"}`)
	backend.finish("s-1", "a")
	fmt.Println(call(http.MethodGet, "/v1/sessions", ""))
	fmt.Println(call(http.MethodGet, "/v1/sessions?state=completed", ""))
	fmt.Println(call(http.MethodGet, "/v1/sessions/s-2/source", ""))
	// Output:
	// s-2 suspended [echo]; s-1 completed [echo]
	// s-1 completed [echo]
	// await tool.start('echo','b')
}
