package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dop251/goja"
)

// JSON between tool text and script values. The host never reads the
// global JSON object: goja builds it on first access, which costs a fresh
// vm some fifty allocations (more than the whole tool object) that most
// scripts never need, and looking it up only when needed would let a
// script that replaced JSON.parse or JSON.stringify steer the host's
// conversions. Both directions instead run goja's own algorithm, reached
// without the global object, so they behave as the pristine builtins
// whatever a script did to its globals.

// holderPrefix is how goja serialises the key of the holder object
// stringifyJSON wraps a value in.
const holderPrefix = `{"":`

// stringifyJSON is the pristine JSON.stringify(v): JSON text as a string
// value, or undefined for what JSON cannot represent (undefined, a
// function, a symbol, a toJSON returning one of those). Errors are the
// script's exceptions (a throwing toJSON, a BigInt, a cycle) or an
// uncatchable interrupt.
func (a *scriptAPI) stringifyJSON(v goja.Value) (goja.Value, error) {
	if a.stringify == nil {
		// Called through a goja function, the serialiser unwinds
		// exceptions and runs queued jobs exactly as a call of the
		// builtin from Go does.
		a.stringify, _ = goja.AssertFunction(a.nativeFunc("stringify", 1, a.marshalJSON))
	}
	return a.stringify(goja.Undefined(), v)
}

// marshalJSON serialises its argument as the value of the "" key of a
// holder object, the holder JSON.stringify itself builds: toJSON sees the
// same key, and a value JSON skips leaves the holder empty instead of
// turning into the "null" that Object.MarshalJSON writes for it. The
// holder has no prototype, so nothing a script put on Object.prototype
// (a toJSON, say) applies to it.
func (a *scriptAPI) marshalJSON(c goja.FunctionCall) goja.Value {
	holder := a.vm.CreateObject(nil)
	_ = holder.DefineDataProperty("", c.Argument(0), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
	out, err := holder.MarshalJSON()
	if err != nil {
		panic(err) // the script's exception, rethrown as is
	}
	if len(out) <= len(holderPrefix) {
		return goja.Undefined() // "{}"
	}
	return a.vm.ToValue(string(out[len(holderPrefix) : len(out)-1]))
}

// parseJSON turns a JSON tool output into a script value as the pristine
// JSON.parse does: goja's parser is a walk over encoding/json tokens,
// repeated here with the same tokens, values and property definitions. A
// failure reads as the message of the SyntaxError JSON.parse would throw.
func (a *scriptAPI) parseJSON(text string) (goja.Value, error) {
	d := json.NewDecoder(strings.NewReader(text))
	v, err := a.decodeValue(d)
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("SyntaxError: Unexpected end of JSON input (%v)", err.Error())
	}
	if err != nil {
		return nil, errors.New("SyntaxError: " + err.Error())
	}
	if tok, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("SyntaxError: Unexpected token at the end: %v", tok)
	}
	return v, nil
}

func (a *scriptAPI) decodeValue(d *json.Decoder) (goja.Value, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	return a.decodeToken(d, tok)
}

func (a *scriptAPI) decodeToken(d *json.Decoder, tok json.Token) (goja.Value, error) {
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			return a.decodeObject(d)
		case '[':
			return a.decodeArray(d)
		}
	case nil:
		return goja.Null(), nil
	case string, float64, bool:
		return a.vm.ToValue(tok), nil
	}
	return nil, fmt.Errorf("Unexpected token %v", tok)
}

// decodeObject defines each member as an own data property, so a
// "__proto__" key is a property like any other and no setter runs; a
// repeated key keeps its first position and its last value.
func (a *scriptAPI) decodeObject(d *json.Decoder) (goja.Value, error) {
	obj := a.vm.NewObject()
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		if tok == json.Delim('}') {
			return obj, nil
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("Unexpected token %v", tok)
		}
		v, err := a.decodeValue(d)
		if err != nil {
			return nil, err
		}
		_ = obj.DefineDataProperty(key, v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
	}
}

func (a *scriptAPI) decodeArray(d *json.Decoder) (goja.Value, error) {
	var items []any
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		if tok == json.Delim(']') {
			return a.vm.NewArray(items...), nil
		}
		v, err := a.decodeToken(d, tok)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
	}
}
