// Command wordcount is an example process tool built on splashtool: it
// counts the words of its text input, streams one progress chunk per line
// and answers {"words":N,"distinct":M}.
//
// A catalog entry runs it with `process: {command: [wordcount]}`; the
// worker supplies the key, the session and standard input and output.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/sdk/go/splashtool"
)

func main() {
	if err := splashtool.Serve(count, splashtool.Cancellable(true)); err != nil {
		log.Fatal(err) // the session failed closed; the worker sees the exit
	}
}

func count(ctx context.Context, call *splashtool.Call) (splashtool.Output, error) {
	if call.Input.Format != protocol.FormatText {
		return splashtool.Output{}, splashtool.Permanent(fmt.Errorf("want text input, got %s", call.Input.Format))
	}
	distinct := map[string]bool{}
	words := 0
	for i, line := range strings.Split(call.Input.Text, "\n") {
		if errors.Is(context.Cause(ctx), splashtool.ErrCancelled) {
			return splashtool.Output{}, splashtool.CancelAcknowledged()
		}
		fields := strings.Fields(line)
		for _, w := range fields {
			distinct[strings.ToLower(w)] = true
		}
		words += len(fields)
		if err := call.Stream(fmt.Sprintf("line %d: %d words", i+1, len(fields))); err != nil {
			return splashtool.Output{}, err
		}
	}
	raw, err := json.Marshal(struct {
		Words    int `json:"words"`
		Distinct int `json:"distinct"`
	}{words, len(distinct)})
	if err != nil {
		return splashtool.Output{}, splashtool.Permanent(err)
	}
	return splashtool.JSON(raw), nil
}
