package apitoken_test

import (
	"fmt"

	"github.com/splashfabric/splashfabric/httpapi/apitoken"
)

// A token file names each token, keeps only its digest, and gives it
// scopes and the tools its sessions may use.
func ExampleParse() {
	set, err := apitoken.Parse([]byte(`
tokens:
  - name: ci
    sha256: ` + apitoken.DigestOf("ci-secret").String() + `
    scopes: [submit, read]
    tools: ["demo.*"]
`))
	if err != nil {
		panic(err)
	}
	tok, ok := set.Lookup("ci-secret")
	fmt.Println(ok, tok.Name(), tok.Scopes())
	fmt.Println(tok.Has(apitoken.ScopeRead), tok.Has(apitoken.ScopeCancel))
	fmt.Println(tok.MayUse("demo.upper"), tok.MayUse("demo.json.sum"))
	_, ok = set.Lookup("guess")
	fmt.Println(ok)
	// Output:
	// true ci [submit read]
	// true false
	// true false
	// false
}
