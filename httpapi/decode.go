package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// decodeJSON reads exactly one JSON object from r's body into v, refusing
// unknown fields, trailing data and bodies over limit. Its errors wrap the
// package sentinels with a message that names the problem's place.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return fmt.Errorf("%w: %q, want application/json", ErrUnsupportedMediaType, ct)
		}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, limit)
	}
	// A second value (or garbage) after the object is as malformed as a
	// broken object: the client did not send what it meant to.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return decodeError(err, limit)
		}
		return fmt.Errorf("%w: unexpected data after the JSON object", ErrMalformedJSON)
	}
	return nil
}

func decodeError(err error, limit int64) error {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
		tooBig *http.MaxBytesError
	)
	switch {
	case errors.As(err, &tooBig):
		return fmt.Errorf("%w: limit is %d bytes", ErrBodyTooLarge, limit)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: empty body, want a JSON object", ErrMalformedJSON)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: body ends inside a JSON value", ErrMalformedJSON)
	case errors.As(err, &syntax):
		return fmt.Errorf("%w: %v at byte %d", ErrMalformedJSON, syntax, syntax.Offset)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Errorf("%w: body is a JSON %s, want an object", ErrMalformedJSON, typ.Value)
		}
		return fmt.Errorf("%w: field %q is a JSON %s, want %s", ErrMalformedJSON, typ.Field, typ.Value, typ.Type)
	}
	// encoding/json reports unknown fields only as text.
	const prefix = "json: unknown field "
	if msg := err.Error(); len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		return fmt.Errorf("%w: %s", ErrUnknownField, msg[len(prefix):])
	}
	return fmt.Errorf("%w: %v", ErrMalformedJSON, err)
}
