package apitoken_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/httpapi/apitoken"
)

func digest(secret string) string { return apitoken.DigestOf(secret).String() }

func TestParse(t *testing.T) {
	ci := digest("ci-secret")
	ro := digest("ro-secret")
	tests := []struct {
		name    string
		file    string
		wantErr error
		errText string
		check   func(t *testing.T, s *apitoken.Set)
	}{
		{
			name: "tokens with scopes and tools",
			file: `
tokens:
  - name: ci
    sha256: ` + ci + `
    scopes: [submit, read]
    tools: ["demo.*", "text.>"]
  - name: dashboard
    owner: ci
    sha256: ` + strings.ToUpper(ro) + `
    scopes: [read]
`,
			check: func(t *testing.T, s *apitoken.Set) {
				tok, ok := s.Lookup("ci-secret")
				if !ok || tok.Name() != "ci" || !tok.Has(apitoken.ScopeSubmit) || !tok.Has(apitoken.ScopeRead) || tok.Has(apitoken.ScopeCancel) || tok.Admin() {
					t.Fatalf("ci = %+v", tok)
				}
				if !tok.MayUse("demo.upper") || !tok.MayUse("text.a.b") || tok.MayUse("demo.json.sum") {
					t.Fatal("ci's tools do not match its patterns")
				}
				ro, ok := s.Lookup("ro-secret")
				if tok.Owner() != "ci" {
					t.Fatalf("ci's owner = %q, want its name", tok.Owner())
				}
				if !ok || ro.Name() != "dashboard" || ro.Owner() != "ci" || ro.MayUse("demo.upper") {
					t.Fatalf("dashboard = %+v: a token without tools may use none", ro)
				}
				if _, ok := s.Lookup("ci-secret "); ok {
					t.Fatal("a different bearer matched")
				}
				if !slices.Equal(s.Names(), []string{"ci", "dashboard"}) {
					t.Fatalf("names = %q", s.Names())
				}
			},
		},
		{
			name: "json is yaml",
			file: `{"tokens":[{"name":"ci","sha256":"` + ci + `","scopes":["admin"],"tools":[]}]}`,
			check: func(t *testing.T, s *apitoken.Set) {
				tok, _ := s.Lookup("ci-secret")
				if !tok.Admin() || !tok.Has(apitoken.ScopeCancel) || !tok.Has(apitoken.ScopeMetrics) || tok.MayUse("demo.upper") {
					t.Fatalf("admin = %+v: every scope, the tools it names (none)", tok)
				}
			},
		},
		{name: "no tokens", file: "tokens: []\n", check: func(t *testing.T, s *apitoken.Set) {
			if s.Len() != 0 {
				t.Fatal("tokens from nowhere")
			}
		}},
		{name: "unknown field", file: "tokens:\n  - name: ci\n    sha256: " + ci + "\n    scope: [read]\n", wantErr: apitoken.ErrInvalidFile, errText: "scope"},
		{name: "unknown scope", file: "tokens:\n  - name: ci\n    sha256: " + ci + "\n    scopes: [write]\n", wantErr: apitoken.ErrInvalidToken, errText: `unknown scope "write"`},
		{name: "short digest", file: "tokens:\n  - name: ci\n    sha256: abcd\n    scopes: [read]\n", wantErr: apitoken.ErrInvalidToken, errText: "64 hex digits"},
		{name: "not hex", file: "tokens:\n  - name: ci\n    sha256: " + strings.Repeat("zz", 32) + "\n", wantErr: apitoken.ErrInvalidToken, errText: "not hex"},
		{name: "no name", file: "tokens:\n  - sha256: " + ci + "\n    scopes: [read]\n", wantErr: apitoken.ErrInvalidToken, errText: "name"},
		{name: "name with a space", file: "tokens:\n  - name: c i\n    sha256: " + ci + "\n", wantErr: apitoken.ErrInvalidToken},
		{name: "owner with a slash", file: "tokens:\n  - {name: ci, owner: a/b, sha256: " + ci + "}\n", wantErr: apitoken.ErrInvalidToken, errText: "owner"},
		{name: "malformed tool pattern", file: "tokens:\n  - name: ci\n    sha256: " + ci + "\n    scopes: [submit]\n    tools: [\"demo.\"]\n", wantErr: apitoken.ErrInvalidToken, errText: "tools"},
		{name: "submit without tools", file: "tokens:\n  - name: ci\n    sha256: " + ci + "\n    scopes: [submit]\n", wantErr: apitoken.ErrInvalidToken, errText: `[">"]`},
		{name: "admin without tools", file: "tokens:\n  - name: ci\n    sha256: " + ci + "\n    scopes: [admin]\n", wantErr: apitoken.ErrInvalidToken, errText: "names no tools"},
		{name: "two tokens one name", file: "tokens:\n  - {name: ci, sha256: " + ci + "}\n  - {name: ci, sha256: " + ro + "}\n", wantErr: apitoken.ErrInvalidToken, errText: "two tokens named"},
		{name: "two tokens one digest", file: "tokens:\n  - {name: ci, sha256: " + ci + "}\n  - {name: ro, sha256: " + ci + "}\n", wantErr: apitoken.ErrInvalidToken, errText: "one digest"},
		{name: "not yaml", file: "tokens: [", wantErr: apitoken.ErrInvalidFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := apitoken.Parse([]byte(tt.file))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !errors.Is(err, apitoken.ErrInvalidFile) || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err = %v, want %v (and ErrInvalidFile) saying %q", err, tt.wantErr, tt.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
}

func TestRootHoldsEverything(t *testing.T) {
	s := apitoken.Single("dev", "s3cret")
	tok, ok := s.Lookup("s3cret")
	if !ok || tok.Name() != "dev" || !tok.Admin() || !tok.Tools().All() || !tok.MayUse("any.tool") {
		t.Fatalf("root = %+v", tok)
	}
	for _, sc := range apitoken.Scopes() {
		if !tok.Has(sc) {
			t.Errorf("root lacks %s", sc)
		}
	}
	for _, bad := range []string{"", "s3cre", "s3cret\n"} {
		if _, ok := s.Lookup(bad); ok {
			t.Errorf("Lookup(%q) matched", bad)
		}
	}
	var nilSet *apitoken.Set
	if _, ok := nilSet.Lookup("s3cret"); ok {
		t.Error("a nil set knows a token")
	}
}

func TestContextCarriesTheToken(t *testing.T) {
	if _, ok := apitoken.FromContext(context.Background()); ok {
		t.Fatal("a token from nowhere")
	}
	tok := apitoken.Root("dev")
	got, ok := apitoken.FromContext(apitoken.NewContext(context.Background(), tok))
	if !ok || got != tok {
		t.Fatal("the token did not travel")
	}
	if _, ok := apitoken.FromContext(apitoken.NewContext(context.Background(), nil)); ok {
		t.Fatal("a nil token travelled")
	}
}
