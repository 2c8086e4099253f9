package apiclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/apiclient/apitest"
)

// Submit a script, print its chunks as they arrive, then its result.
func ExampleClient_Events() {
	srv, err := apitest.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx := context.Background()

	c, _ := apiclient.New(srv.URL, srv.Token)
	s, err := c.Submit(ctx, apiclient.SubmitRequest{Source: `await tool.start("demo.stream", "3")`})
	if err != nil {
		fmt.Println(err)
		return
	}
	stream, err := c.Events(ctx, s.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stream.Close()
	for {
		ev, err := stream.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		switch {
		case ev.Kind == apiclient.EventChunk:
			fmt.Println(ev.Chunk.Tool, ev.Chunk.Text)
		case ev.Terminal():
			fmt.Println(ev.State.State, *ev.State.Value)
		}
	}
	// Output:
	// demo.stream chunk 1/3
	// demo.stream chunk 2/3 token=[redacted]
	// demo.stream chunk 3/3
	// completed streamed 3 chunks
}

// A wrong token is an *Error that matches ErrUnauthorized.
func ExampleError() {
	srv, err := apitest.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	c, _ := apiclient.New(srv.URL, "not-the-token")
	_, err = c.Operations(context.Background())
	fmt.Println(errors.Is(err, apiclient.ErrUnauthorized))
	var apiErr *apiclient.Error
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.Status, apiErr.Code)
	}
	fmt.Println(err)
	// Output:
	// true
	// 401 invalid_token
	// httpapi: invalid bearer token (401 invalid_token)
}
