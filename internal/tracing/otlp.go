package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpHTTP exports spans to an OTLP collector over HTTP, in protobuf: a
// POST of an ExportTraceServiceRequest to /v1/traces. The request is
// encoded as TracesData, its wire twin in the trace package, which
// spares the collector package and, with it, the gRPC runtime.
type otlpHTTP struct {
	client  *http.Client
	url     string
	headers map[string]string
	gzip    bool

	mu   sync.Mutex
	done bool
}

var _ sdktrace.SpanExporter = (*otlpHTTP)(nil)

// xrayHost matches X-Ray's own OTLP endpoints (xray.REGION.amazonaws.com,
// and the .com.cn of China's regions).
var xrayHost = regexp.MustCompile(`(?i)^xray\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$`)

// defaultEndpoint is the OTLP/HTTP collector on the same host: where the
// ADOT Lambda layer and a local collector listen.
const defaultEndpoint = "http://localhost:4318"

// newOTLP reads the exporter's variables (the traces' own first, then
// the general ones), naming a bad one in its error.
func newOTLP(getenv func(string) string) (*otlpHTTP, error) {
	e := &otlpHTTP{headers: map[string]string{}}
	pick := func(specific, general string) (string, string) {
		if v := strings.TrimSpace(getenv(specific)); v != "" {
			return specific, v
		}
		return general, strings.TrimSpace(getenv(general))
	}
	name, v := pick(EnvTracesEndpoint, EnvEndpoint)
	switch {
	case v == "":
		e.url = defaultEndpoint + "/v1/traces"
	case name == EnvTracesEndpoint:
		e.url = v // the traces' endpoint is used as it is
	default:
		e.url = strings.TrimSuffix(v, "/") + "/v1/traces"
	}
	u, err := url.Parse(e.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: %q is no http(s) URL", name, v)
	}
	if xrayHost.MatchString(u.Hostname()) {
		return nil, fmt.Errorf("%s: %q is X-Ray's OTLP endpoint, which takes only requests signed with AWS credentials (SigV4), and slotq's exporter does not sign: send to a collector that does, such as the ADOT collector layer (http://localhost:4318)", name, v)
	}
	name, v = pick(EnvTracesHeaders, EnvHeaders)
	for pair := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, val, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if !ok || k == "" || err != nil {
			return nil, fmt.Errorf("%s: want key=value pairs separated by commas (values percent-encoded)", name)
		}
		e.headers[k] = dec
	}
	timeout := 10 * time.Second
	if name, v = pick(EnvTracesTimeout, EnvTimeout); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("%s: %q is no positive number of milliseconds", name, v)
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	e.client = &http.Client{Timeout: timeout}
	switch name, v = pick(EnvTracesCompression, EnvCompression); v {
	case "", "none":
	case "gzip":
		e.gzip = true
	default:
		return nil, fmt.Errorf("%s: %q: want gzip or none", name, v)
	}
	return e, nil
}

// ExportSpans sends spans in one request. A collector's refusal is an
// error the SDK reports (otel.Handle); the spans are not sent again.
func (e *otlpHTTP) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	done := e.done
	e.mu.Unlock()
	if done || len(spans) == 0 {
		return nil
	}
	body, err := proto.Marshal(tracesData(spans))
	if err != nil {
		return fmt.Errorf("otlp: encode: %w", err)
	}
	var r io.Reader = bytes.NewReader(body)
	if e.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		_ = zw.Close()
		r = &b
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, r)
	if err != nil {
		return fmt.Errorf("otlp: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for k, v := range e.headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("otlp: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otlp: %s: %s: %s", e.url, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// Shutdown stops the exporter: later exports send nothing.
func (e *otlpHTTP) Shutdown(context.Context) error {
	e.mu.Lock()
	e.done = true
	e.mu.Unlock()
	e.client.CloseIdleConnections()
	return nil
}

// tracesData groups spans by resource and instrumentation scope, as OTLP
// has them.
func tracesData(spans []sdktrace.ReadOnlySpan) *tracepb.TracesData {
	type scopeKey struct {
		res   *resource.Resource
		scope instrumentation.Scope
	}
	byRes := map[*resource.Resource]*tracepb.ResourceSpans{}
	byScope := map[scopeKey]*tracepb.ScopeSpans{}
	td := &tracepb.TracesData{}
	for _, s := range spans {
		res := s.Resource()
		rs := byRes[res]
		if rs == nil {
			rs = &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: keyValues(res.Attributes())}, SchemaUrl: res.SchemaURL()}
			byRes[res] = rs
			td.ResourceSpans = append(td.ResourceSpans, rs)
		}
		k := scopeKey{res, s.InstrumentationScope()}
		ss := byScope[k]
		if ss == nil {
			ss = &tracepb.ScopeSpans{
				Scope:     &commonpb.InstrumentationScope{Name: k.scope.Name, Version: k.scope.Version, Attributes: keyValues(k.scope.Attributes.ToSlice())},
				SchemaUrl: k.scope.SchemaURL,
			}
			byScope[k] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, span(s))
	}
	return td
}

func span(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc, parent := s.SpanContext(), s.Parent()
	tid, sid := sc.TraceID(), sc.SpanID()
	p := &tracepb.Span{
		TraceId: tid[:], SpanId: sid[:], TraceState: sc.TraceState().String(),
		Flags: flags(sc.TraceFlags(), parent), Name: s.Name(), Kind: tracepb.Span_SpanKind(s.SpanKind()),
		StartTimeUnixNano: unixNano(s.StartTime()), EndTimeUnixNano: unixNano(s.EndTime()),
		Attributes: keyValues(s.Attributes()), DroppedAttributesCount: uint32(s.DroppedAttributes()),
		DroppedEventsCount: uint32(s.DroppedEvents()), DroppedLinksCount: uint32(s.DroppedLinks()),
		Status: &tracepb.Status{Message: s.Status().Description, Code: statusCode(s.Status().Code)},
	}
	if parent.SpanID().IsValid() {
		psid := parent.SpanID()
		p.ParentSpanId = psid[:]
	}
	for _, ev := range s.Events() {
		p.Events = append(p.Events, &tracepb.Span_Event{
			TimeUnixNano: unixNano(ev.Time), Name: ev.Name, Attributes: keyValues(ev.Attributes),
			DroppedAttributesCount: uint32(ev.DroppedAttributeCount),
		})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		p.Links = append(p.Links, &tracepb.Span_Link{
			TraceId: ltid[:], SpanId: lsid[:], TraceState: l.SpanContext.TraceState().String(),
			Attributes: keyValues(l.Attributes), DroppedAttributesCount: uint32(l.DroppedAttributeCount),
			Flags: flags(l.SpanContext.TraceFlags(), l.SpanContext),
		})
	}
	return p
}

// flags are OTLP's span flags: the W3C trace flags, and whether the
// parent (or the linked span) is remote.
func flags(tf trace.TraceFlags, other trace.SpanContext) uint32 {
	f := uint32(tf) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if other.IsRemote() {
		f |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return f
}

func statusCode(c codes.Code) tracepb.Status_StatusCode {
	switch c {
	case codes.Error:
		return tracepb.Status_STATUS_CODE_ERROR
	case codes.Ok:
		return tracepb.Status_STATUS_CODE_OK
	}
	return tracepb.Status_STATUS_CODE_UNSET
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

func keyValues(attrs []attribute.KeyValue) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, &commonpb.KeyValue{Key: string(a.Key), Value: anyValue(a.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.BOOLSLICE:
		return array(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return array(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return array(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return array(v.AsStringSlice(), attribute.StringValue)
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.Emit()}}
}

func array[T any](vs []T, value func(T) attribute.Value) *commonpb.AnyValue {
	arr := &commonpb.ArrayValue{}
	for _, x := range vs {
		arr.Values = append(arr.Values, anyValue(value(x)))
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}
}
