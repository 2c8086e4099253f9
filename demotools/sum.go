package demotools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workeragent"
)

// sum answers {"sum": n} for input {"numbers": [...]}. The host has checked
// the input against the catalog's input schema already; the handler still reads it
// strictly, since a worker cannot know which host sent the call.
func sum(_ context.Context, call *workeragent.Call) (workeragent.Output, error) {
	if call.Input.Format != protocol.FormatJSON {
		return workeragent.Output{}, workeragent.Permanent(
			fmt.Errorf("%w: want JSON input, got format %q", ErrInvalidInput, call.Input.Format))
	}
	var in struct {
		Numbers *[]float64 `json:"numbers"`
	}
	dec := json.NewDecoder(bytes.NewReader(call.Input.JSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || in.Numbers == nil {
		return workeragent.Output{}, workeragent.Permanent(
			fmt.Errorf("%w: want {\"numbers\": [...]}, got %q", ErrInvalidInput, call.Input.JSON))
	}
	var total float64
	for _, x := range *in.Numbers {
		total += x
	}
	if math.IsInf(total, 0) {
		return workeragent.Output{}, workeragent.Permanent(fmt.Errorf("%w: sum overflows", ErrInvalidInput))
	}
	out, err := json.Marshal(struct {
		Sum float64 `json:"sum"`
	}{total})
	if err != nil {
		return workeragent.Output{}, workeragent.Permanent(err)
	}
	return workeragent.JSONResult(out), nil
}
