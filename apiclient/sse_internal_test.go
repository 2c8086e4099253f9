package apiclient

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestEventStreamParse(t *testing.T) {
	const done = `{"id":"s-1","state":"completed","value":"v","created":"2025-01-02T03:04:05Z","operations":[]}`
	tests := []struct {
		name      string
		wire      string
		wantKinds string // kinds of the events, comma-separated
		wantData  []string
		wantErr   error
	}{
		{
			name:      "chunk then terminal state",
			wire:      "event: chunk\ndata: {\"text\":\"a\"}\n\nevent: state\ndata: " + done + "\n\n",
			wantKinds: "chunk,state",
			wantErr:   io.EOF,
		},
		{
			name:      "comments and crlf",
			wire:      ": keepalive\r\n\r\nevent: chunk\r\ndata: {\"text\":\"a\"}\r\n\r\nevent: state\r\ndata: " + done + "\r\n\r\n",
			wantKinds: "chunk,state",
			wantErr:   io.EOF,
		},
		{
			name:      "nothing after the terminal state is read",
			wire:      "event: state\ndata: " + done + "\n\nevent: chunk\ndata: {}\n\n",
			wantKinds: "state",
			wantErr:   io.EOF,
		},
		{
			name:      "multi-line data and no space after the colon",
			wire:      "event:future\ndata:{\"a\":\ndata: 1}\n\n",
			wantKinds: "future",
			wantData:  []string{"{\"a\":\n1}"},
			wantErr:   ErrStreamEnded,
		},
		{
			name:      "an event without data is dropped",
			wire:      "event: chunk\n\nid: 7\nretry: 10\n\n",
			wantKinds: "",
			wantErr:   ErrStreamEnded,
		},
		{
			name:      "lagged then the end",
			wire:      "event: lagged\ndata: {\"message\":\"behind\"}\n\n",
			wantKinds: "lagged",
			wantErr:   ErrStreamEnded,
		},
		{
			name:      "cut mid-event",
			wire:      "event: chunk\ndata: {\"text\":\"a\"}",
			wantKinds: "",
			wantErr:   ErrStreamEnded,
		},
		{
			name:    "data that is not json",
			wire:    "event: chunk\ndata: {\n\n",
			wantErr: ErrBadResponse,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newEventStream(context.Background(), io.NopCloser(strings.NewReader(tt.wire)))
			var kinds, data []string
			var err error
			for {
				var ev Event
				if ev, err = s.Next(); err != nil {
					break
				}
				kinds = append(kinds, string(ev.Kind))
				data = append(data, string(ev.Data))
				if ev.Kind == EventLagged && ev.Message != "behind" {
					t.Errorf("lagged message %q", ev.Message)
				}
			}
			if got := strings.Join(kinds, ","); got != tt.wantKinds {
				t.Errorf("kinds %q, want %q", got, tt.wantKinds)
			}
			if tt.wantData != nil && strings.Join(data, "|") != strings.Join(tt.wantData, "|") {
				t.Errorf("data %q, want %q", data, tt.wantData)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("ended with %v, want %v", err, tt.wantErr)
			}
			if _, again := s.Next(); !errors.Is(again, tt.wantErr) {
				t.Errorf("Next after the end: %v, want %v again", again, tt.wantErr)
			}
		})
	}
}
