package apiclient_test

import (
	"context"
	"errors"
	"testing"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/apiclient/apitest"
	"github.com/splashfabric/splashfabric/httpapi/apitoken"
)

// A token that may not do something gets a typed 403 naming the scope it
// lacks or the tool it may not grant; a session a token may use is
// submitted with the tools it names.
func TestForbidden(t *testing.T) {
	ctx := context.Background()
	var entries []apitoken.Entry
	for _, sp := range []apitoken.Spec{
		{Name: "reader", Scopes: []apitoken.Scope{apitoken.ScopeRead}},
		{Name: "narrow", Scopes: []apitoken.Scope{apitoken.ScopeSubmit, apitoken.ScopeRead}, Tools: []string{"demo.echo"}},
	} {
		tok, err := apitoken.New(sp)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, apitoken.Entry{Digest: apitoken.DigestOf(sp.Name + "-secret"), Token: tok})
	}
	set, err := apitoken.NewSet(entries)
	if err != nil {
		t.Fatal(err)
	}
	srv := apitest.Start(t, apitest.WithTokens(set))
	reader, _ := apiclient.New(srv.URL, "reader-secret")
	narrow, _ := apiclient.New(srv.URL, "narrow-secret")

	_, err = reader.Submit(ctx, apiclient.SubmitRequest{Source: "return 1"})
	var apiErr *apiclient.Error
	if !errors.Is(err, apiclient.ErrForbidden) || !errors.Is(err, apiclient.ErrMissingScope) || !errors.As(err, &apiErr) || apiErr.Scope != "submit" {
		t.Fatalf("reader submitting: %v (%+v)", err, apiErr)
	}
	_, err = narrow.Submit(ctx, apiclient.SubmitRequest{Source: "return 1", Tools: []string{"demo.*"}})
	if !errors.Is(err, apiclient.ErrForbidden) || !errors.Is(err, apiclient.ErrToolNotPermitted) || !errors.As(err, &apiErr) || apiErr.Tool != "demo.*" {
		t.Fatalf("narrow granting demo.*: %v (%+v)", err, apiErr)
	}
	_, err = narrow.Cancel(ctx, "s-1", "op-1")
	if !errors.Is(err, apiclient.ErrMissingScope) || !errors.As(err, &apiErr) || apiErr.Scope != "cancel" {
		t.Fatalf("narrow cancelling: %v", err)
	}
	s, err := narrow.Submit(ctx, apiclient.SubmitRequest{Source: `return await tool.start("demo.echo", "hi")`, Tools: []string{"demo.echo"}, WaitMS: 10000})
	if err != nil || !s.Terminal() || s.Value == nil || *s.Value != "hi" {
		t.Fatalf("narrow's own tool: %+v, %v", s, err)
	}
	if _, err := reader.Session(ctx, s.ID); !errors.Is(err, apiclient.ErrUnknownSession) {
		t.Fatalf("reader read another token's session: %v", err)
	}
}
