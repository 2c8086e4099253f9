package toolspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// decodeError is a decoding fault at a JSON path, before the tool it
// belongs to is known.
type decodeError struct {
	field string
	err   error
}

// decodeStrict decodes one JSON value into dst, a pointer, refusing keys
// the types do not define and reporting each fault at its JSON path.
//
// encoding/json's DisallowUnknownFields would refuse unknown keys too, but
// it matches keys case-insensitively (so "Name" and "name" both land in
// Name) and its errors do not say where a fault is. Walking the value one
// field at a time gives exact paths such as "redact[1].regexp" and leaves
// every leaf to encoding/json. A null anywhere means the field is absent.
func decodeStrict(raw []byte, dst any) *decodeError {
	return decodeValue(raw, reflect.ValueOf(dst).Elem(), "")
}

var (
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	unmarshalerType   = reflect.TypeFor[json.Unmarshaler]()
	strictDecoderType = reflect.TypeFor[strictDecoder]()
)

// strictDecoder is a type with a reading of its own that still reports
// faults at their JSON path (Contain: a boolean or an object).
type strictDecoder interface {
	decodeStrictValue(raw []byte, path string) *decodeError
}

func decodeValue(raw []byte, v reflect.Value, path string) *decodeError {
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return nil
	}
	t := v.Type()
	switch {
	case reflect.PointerTo(t).Implements(strictDecoderType):
		return v.Addr().Interface().(strictDecoder).decodeStrictValue(raw, path)
	case reflect.PointerTo(t).Implements(unmarshalerType) || t == rawMessageType:
		return decodeLeaf(raw, v, path)
	case t.Kind() == reflect.Struct:
		return decodeObject(raw, v, path)
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct:
		p := reflect.New(t.Elem())
		if err := decodeValue(raw, p.Elem(), path); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case t.Kind() == reflect.Slice:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return &decodeError{path, fmt.Errorf("%w: want an array, got %s", ErrInvalidValue, jsonKind(raw))}
		}
		s := reflect.MakeSlice(t, len(items), len(items))
		for i, item := range items {
			if err := decodeValue(item, s.Index(i), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	default:
		return decodeLeaf(raw, v, path)
	}
}

// decodeObject decodes a JSON object into the struct v: unknown keys
// first, in sorted order, then the fields in declaration order, so the
// first fault reported does not depend on map iteration.
func decodeObject(raw []byte, v reflect.Value, path string) *decodeError {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return &decodeError{path, fmt.Errorf("%w: want an object, got %s", ErrInvalidValue, jsonKind(raw))}
	}
	fields := jsonFields(v.Type())
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, ok := fields[k]; !ok {
			return &decodeError{joinPath(path, clip.String(k, clip.Echo)), ErrUnknownField}
		}
	}
	for i := 0; i < v.NumField(); i++ {
		name := jsonName(v.Type().Field(i))
		r, ok := m[name]
		if name == "" || !ok {
			continue
		}
		if err := decodeValue(r, v.Field(i), joinPath(path, name)); err != nil {
			return err
		}
	}
	return nil
}

// decodeLeaf hands a value encoding/json knows how to decode to it, and
// rewords its error so that the value itself is never repeated.
func decodeLeaf(raw []byte, v reflect.Value, path string) *decodeError {
	err := json.Unmarshal(raw, v.Addr().Interface())
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, ErrInvalidValue), errors.Is(err, ErrOutOfRange):
		return &decodeError{path, err}
	case errors.As(err, &te):
		return &decodeError{path, fmt.Errorf("%w: want %s, got %s", ErrInvalidValue, typeName(v.Type()), jsonKind(raw))}
	default:
		return &decodeError{path, fmt.Errorf("%w: %s", ErrInvalidValue, clip.String(err.Error(), maxMessage))}
	}
}

// jsonFields returns the set of JSON keys a struct type defines.
func jsonFields(t reflect.Type) map[string]bool {
	m := make(map[string]bool, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		if name := jsonName(t.Field(i)); name != "" {
			m[name] = true
		}
	}
	return m
}

// jsonName returns the key of an exported field's json tag, or "".
func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	return name
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonKind names the kind of a JSON value from its first byte.
func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// typeName names a Go leaf type in catalog terms.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer in range"
	default:
		return t.String()
	}
}
