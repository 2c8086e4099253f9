// Package apitoken says who a bearer token of the host API is and what it
// may do: its scopes (submit, read, cancel, metrics, admin) and the tool
// patterns its sessions may use.
//
// A host with one token (splash dev, or --api-token) holds a Set of one
// all-powerful token. A host with many reads them from a token file that
// keeps only each token's SHA-256 digest, and rereads it when it changes:
//
//	tokens:
//	  - name: ci                     # names the token in logs and errors
//	    owner: build                 # owns its sessions; default: the name
//	    sha256: 9f86d081884c7d65...  # hex SHA-256 of the bearer token
//	    scopes: [submit, read]
//	    tools: ["demo.*", "text.>"]
//
//	f, err := apitoken.OpenFile(path, apitoken.FileConfig{OnReload: logIt})
//	defer f.Close()
//	api := httpapi.New(loop, httpapi.Config{Tokens: f})
//
// The token a request carried travels in its context (NewContext,
// FromContext), so that what serves it further in (MCP's tools) applies
// the same scopes and tools.
package apitoken
