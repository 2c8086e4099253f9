package httpapi_test

import (
	"fmt"
	"io"
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
