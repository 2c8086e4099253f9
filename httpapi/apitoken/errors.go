package apitoken

import "errors"

// Errors of this package.
var (
	// ErrInvalidFile: a token file that cannot be read or does not
	// describe a valid set of tokens. A reload that meets it keeps the
	// tokens it had.
	ErrInvalidFile = errors.New("apitoken: invalid token file")
	// ErrInvalidToken: a token description that is not valid (no name,
	// an unknown scope, a malformed digest or tool pattern).
	ErrInvalidToken = errors.New("apitoken: invalid token")
)
