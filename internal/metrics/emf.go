package metrics

import (
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"time"
)

// MaxValues is the most values one metric may carry in one EMF line
// (CloudWatch rejects more).
const MaxValues = 100

// Line is one EMF log line: the dimensions' values, and each metric with
// its values (one value is written as a number, more as an array). Its
// Attrs carry the "_aws" metadata and the fields, for a JSON slog handler
// to write at the top level of the record.
type Line struct {
	Namespace string
	Time      time.Time
	// DimensionSets lists the sets of dimension keys the metrics are
	// published under; an empty set publishes them without dimensions.
	DimensionSets [][]string
	// Dimensions holds each dimension key's value.
	Dimensions map[string]string
	// Properties are fields of the line that are no dimension (the
	// queue's name, QueueProperty): Logs Insights reads them, CloudWatch
	// Metrics does not.
	Properties map[string]string
	// Names is the metrics' order; Values their values.
	Names  []string
	Values map[string][]float64
}

// metadata is EMF's "_aws" object.
type metadata struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

type directive struct {
	Namespace  string       `json:"Namespace"`
	Dimensions [][]string   `json:"Dimensions"`
	Metrics    []definition `json:"Metrics"`
}

type definition struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

// Attrs returns the line as slog attributes: "_aws", then each dimension,
// then each metric. A metric with more than MaxValues values is the
// caller's error: split is how Flush avoids it.
func (l Line) Attrs() []slog.Attr {
	d := directive{Namespace: l.Namespace, Dimensions: l.DimensionSets}
	attrs := []slog.Attr{{}} // "_aws", set below
	for _, set := range l.DimensionSets {
		for _, k := range set {
			attrs = appendOnce(attrs, slog.String(k, l.Dimensions[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(l.Properties)) {
		attrs = appendOnce(attrs, slog.String(k, l.Properties[k]))
	}
	for _, name := range l.Names {
		vs := l.Values[name]
		if len(vs) == 0 {
			continue
		}
		d.Metrics = append(d.Metrics, definition{Name: name, Unit: unit(name)})
		if len(vs) == 1 {
			attrs = append(attrs, slog.Float64(name, vs[0]))
		} else {
			attrs = append(attrs, slog.Any(name, vs))
		}
	}
	attrs[0] = slog.Any("_aws", metadata{Timestamp: l.Time.UnixMilli(), CloudWatchMetrics: []directive{d}})
	return attrs
}

func appendOnce(attrs []slog.Attr, a slog.Attr) []slog.Attr {
	for _, b := range attrs {
		if b.Key == a.Key {
			return attrs
		}
	}
	return append(attrs, a)
}

// JSON returns the line as a JSON object on its own, as CloudWatch reads
// it (tests and tools; the functions write lines through slog).
func (l Line) JSON() ([]byte, error) {
	m := map[string]any{}
	for _, a := range l.Attrs() {
		m[a.Key] = a.Value.Any()
	}
	return json.Marshal(m)
}

// split cuts l into lines whose metrics carry at most MaxValues values
// each: the first line carries every metric's first MaxValues, the next
// the following ones, and so on.
func split(l Line) []Line {
	var out []Line
	for off := 0; ; off += MaxValues {
		part := l
		part.Values = map[string][]float64{}
		for name, vs := range l.Values {
			if off < len(vs) {
				part.Values[name] = vs[off:min(len(vs), off+MaxValues)]
			}
		}
		if len(part.Values) == 0 {
			return out
		}
		out = append(out, part)
	}
}
