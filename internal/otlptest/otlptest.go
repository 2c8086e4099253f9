// Package otlptest is an OTLP/HTTP trace receiver for tests: a real
// endpoint that the OpenTelemetry exporters (protobuf) and a tool's own
// hand-made export (JSON) send spans to, kept in memory as plain values.
//
//	r := otlptest.Start(t)
//	cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+r.URL())
//	r.WaitFor(t, "the session span", func(s []otlptest.Span) bool { ... })
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, its ids in hex.
type Span struct {
	Service  string
	TraceID  string
	SpanID   string
	ParentID string // "" for a root
	Name     string
	Kind     int
	Start    time.Time
	End      time.Time
	Attrs    map[string]string
	Events   []Event
	// StatusError: the span's status is Error.
	StatusError bool
}

// Event is one span event.
type Event struct {
	Name  string
	Attrs map[string]string
}

// Receiver is a running OTLP/HTTP endpoint.
type Receiver struct {
	srv *http.Server
	url string

	mu    sync.Mutex
	spans []Span
	// bad counts requests that did not decode.
	bad int
}

// Start serves a receiver on a loopback port until the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{url: "http://" + l.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.traces)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.srv.Serve(l)
	}()
	t.Cleanup(func() {
		_ = r.srv.Close()
		<-done
	})
	return r
}

// URL is the endpoint's base URL, for OTEL_EXPORTER_OTLP_ENDPOINT.
func (r *Receiver) URL() string { return r.url }

// Spans returns every span received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Bad counts the requests that did not decode.
func (r *Receiver) Bad() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad
}

// WaitFor polls the received spans until cond holds, failing the test
// with what after timeout.
func (r *Receiver) WaitFor(t testing.TB, timeout time.Duration, what string, cond func([]Span) bool) []Span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		spans := r.Spans()
		if cond(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; %d spans received:\n%s", timeout, what, len(spans), Dump(spans))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Dump lists spans one a line, for a failure message.
func Dump(spans []Span) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "%s %s %s<-%s %q %v\n", s.Service, s.TraceID, s.SpanID, s.ParentID, s.Name, s.Attrs)
	}
	return b.String()
}

func (r *Receiver) traces(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = http.MaxBytesReader(w, req.Body, 16<<20)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			r.fail(w, err)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		r.fail(w, err)
		return
	}
	var spans []Span
	if strings.HasPrefix(req.Header.Get("Content-Type"), "application/json") {
		spans, err = fromJSON(data)
	} else {
		spans, err = fromProto(data)
	}
	if err != nil {
		r.fail(w, err)
		return
	}
	r.mu.Lock()
	r.spans = append(r.spans, spans...)
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *Receiver) fail(w http.ResponseWriter, err error) {
	r.mu.Lock()
	r.bad++
	r.mu.Unlock()
	http.Error(w, err.Error(), http.StatusBadRequest)
}

func fromProto(data []byte) ([]Span, error) {
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &req); err != nil {
		return nil, err
	}
	var out []Span
	for _, rs := range req.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{
					Service: service, TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Kind: int(s.GetKind()),
					Start: time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano())),
					Attrs: attrs(s.GetAttributes()), StatusError: s.GetStatus().GetCode() == 2,
				}
				for _, e := range s.GetEvents() {
					sp.Events = append(sp.Events, Event{Name: e.GetName(), Attrs: attrs(e.GetAttributes())})
				}
				out = append(out, sp)
			}
		}
	}
	return out, nil
}

func attrs(kvs []*common.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *common.AnyValue_StringValue:
			m[kv.GetKey()] = x.StringValue
		case *common.AnyValue_IntValue:
			m[kv.GetKey()] = strconv.FormatInt(x.IntValue, 10)
		case *common.AnyValue_BoolValue:
			m[kv.GetKey()] = strconv.FormatBool(x.BoolValue)
		case *common.AnyValue_DoubleValue:
			m[kv.GetKey()] = strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
		default:
			m[kv.GetKey()] = v.String()
		}
	}
	return m
}

// The OTLP/JSON encoding: ids in hex, times as decimal strings, values
// as {"stringValue": …}.
type jsonRequest struct {
	ResourceSpans []struct {
		Resource struct {
			Attributes []jsonKV `json:"attributes"`
		} `json:"resource"`
		ScopeSpans []struct {
			Spans []struct {
				TraceID      string   `json:"traceId"`
				SpanID       string   `json:"spanId"`
				ParentSpanID string   `json:"parentSpanId"`
				Name         string   `json:"name"`
				Kind         int      `json:"kind"`
				Start        jsonTime `json:"startTimeUnixNano"`
				End          jsonTime `json:"endTimeUnixNano"`
				Attributes   []jsonKV `json:"attributes"`
			} `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

type jsonKV struct {
	Key   string `json:"key"`
	Value struct {
		String *string          `json:"stringValue"`
		Int    *json.RawMessage `json:"intValue"`
		Bool   *bool            `json:"boolValue"`
	} `json:"value"`
}

type jsonTime int64

func (t *jsonTime) UnmarshalJSON(b []byte) error {
	n, err := strconv.ParseInt(strings.Trim(string(b), `"`), 10, 64)
	*t = jsonTime(n)
	return err
}

func jsonAttrs(kvs []jsonKV) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		switch {
		case kv.Value.String != nil:
			m[kv.Key] = *kv.Value.String
		case kv.Value.Int != nil:
			m[kv.Key] = strings.Trim(string(*kv.Value.Int), `"`)
		case kv.Value.Bool != nil:
			m[kv.Key] = strconv.FormatBool(*kv.Value.Bool)
		}
	}
	return m
}

func fromJSON(data []byte) ([]Span, error) {
	var req jsonRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, err
	}
	var out []Span
	for _, rs := range req.ResourceSpans {
		service := jsonAttrs(rs.Resource.Attributes)["service.name"]
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				out = append(out, Span{
					Service: service, TraceID: strings.ToLower(s.TraceID), SpanID: strings.ToLower(s.SpanID),
					ParentID: strings.ToLower(s.ParentSpanID), Name: s.Name, Kind: s.Kind,
					Start: time.Unix(0, int64(s.Start)), End: time.Unix(0, int64(s.End)), Attrs: jsonAttrs(s.Attributes),
				})
			}
		}
	}
	return out, nil
}
