package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// decodeJSON reads exactly one JSON object from r's body into v, refusing
// unknown fields, duplicate keys, trailing data and bodies over limit. Its
// errors wrap the package sentinels with a message that names the
// problem's place.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return fmt.Errorf("%w: %s, want application/json", ErrUnsupportedMediaType, clip.Quote(ct, clip.Echo))
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return readError(err, limit)
	}
	return decodeBody(body, limit, v)
}

// decodeBody is decodeJSON once the body is read: the whole body is
// checked for duplicate keys first, since encoding/json silently keeps the
// last of them.
func decodeBody(body []byte, limit int64, v any) error {
	if err := checkKeys(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
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

// readError classifies a failure to read the body: over the limit, or not
// sent within the server's read timeout (a client trickling its body).
func readError(err error, limit int64) error {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return fmt.Errorf("%w: limit is %d bytes", ErrBodyTooLarge, limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return ErrRequestTimeout
	}
	return fmt.Errorf("%w: body could not be read: %v", ErrMalformedJSON, err)
}

// checkKeys walks body's tokens and refuses an object that names a key
// twice, comparing as encoding/json matches fields (case-insensitively).
// Syntax errors are left to the decoder, which reports them with their
// offset.
func checkKeys(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	// One entry per open container: the keys seen so far for an object,
	// nil for an array.
	var stack []map[string]struct{}
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, make(map[string]struct{}))
				expectKey = true
				continue
			case '[':
				stack = append(stack, nil)
			case '}', ']':
				stack = stack[:len(stack)-1]
			}
			if len(stack) == 0 {
				// Only the first value is the request; the decoder
				// refuses what follows it.
				return nil
			}
		case string:
			if expectKey {
				keys := stack[len(stack)-1]
				// Upper then lower folds as encoding/json does
				// for the special cases (the long s, the Kelvin
				// sign).
				folded := strings.ToLower(strings.ToUpper(t))
				if _, dup := keys[folded]; dup {
					return fmt.Errorf("%w: %s appears twice in one object", ErrDuplicateKey, clip.Quote(t, clip.Echo))
				}
				keys[folded] = struct{}{}
				expectKey = false
				continue
			}
		}
		// After a value, an object's next token is a key again.
		expectKey = len(stack) > 0 && stack[len(stack)-1] != nil
	}
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
		return fmt.Errorf("%w: field %s is a JSON %s, want %s", ErrMalformedJSON, clip.Quote(typ.Field, clip.Echo), typ.Value, typ.Type)
	}
	// encoding/json reports unknown fields only as text.
	const prefix = "json: unknown field "
	if msg := err.Error(); len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		name := msg[len(prefix):]
		if unq, err := strconv.Unquote(name); err == nil {
			name = clip.Quote(unq, clip.Echo)
		}
		return fmt.Errorf("%w: %s", ErrUnknownField, name)
	}
	return fmt.Errorf("%w: %v", ErrMalformedJSON, err)
}
