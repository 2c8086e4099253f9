package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/splashfabric/splashfabric/httpapi"
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
