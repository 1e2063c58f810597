package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Decode parses body strictly into v, a pointer to a struct, by its json
// tags. It is stricter than encoding/json, because bad input must be
// refused with the path of the bad value (docs/guarantees.md §10):
//
//   - keys match json tags exactly, letter case included; an unknown key
//     or a key given twice is an error;
//   - null is read only into pointers, slices and json.RawMessage (as
//     absent, or as the JSON value null for RawMessage); anywhere else it
//     is a wrong type;
//   - integers must be whole and fit their Go type;
//   - a time.Time is read by ParseTime;
//   - trailing data after the object is an error.
//
// Every error is an *Error whose Field is the full path of the bad
// value, such as "jobs[3].not_before" or "config.interval"; "body" stands
// for the whole document. A type with its own UnmarshalJSON (Duration,
// Config) is decoded by it; an *Error it returns has its Field taken
// as relative to the value's path (empty or "body": the value itself).
func Decode(body []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("input.Decode: v must be a non-nil pointer")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var syntax *json.SyntaxError
		switch {
		case errors.Is(err, io.EOF):
			return Invalid("malformed_json", "body", "empty body")
		case errors.As(err, &syntax):
			return Invalid("malformed_json", "body", fmt.Sprintf("malformed JSON at byte %d: %v", syntax.Offset, err))
		}
		return Invalid("malformed_json", "body", fmt.Sprintf("malformed JSON: %v", err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Invalid("malformed_json", "body", fmt.Sprintf("trailing data after the JSON value at byte %d", dec.InputOffset()))
	}
	if err := decodeValue(raw, rv.Elem(), ""); err != nil {
		return err
	}
	return nil
}

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	timeType        = reflect.TypeFor[time.Time]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	plainKeyRE      = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

// fieldPath is the path of key inside the value at path. Keys other than
// plain names are quoted, so a path reads one way only: a.b[2]["x.y"].
func fieldPath(path, key string) string {
	if !plainKeyRE.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldAt is how a path is named in an error: "body" for the whole document.
func fieldAt(path string) string {
	if path == "" {
		return "body"
	}
	return path
}

// jsonKind names the kind of a JSON value for messages, never a Go type.
func JSONKind(raw []byte) string {
	switch {
	case len(raw) == 0:
		return "nothing"
	case raw[0] == '{':
		return "an object"
	case raw[0] == '[':
		return "an array"
	case raw[0] == '"':
		return "a string"
	case raw[0] == 't' || raw[0] == 'f':
		return "a boolean"
	case raw[0] == 'n':
		return "null"
	}
	return "a number"
}

func wrongType(path, want string, raw []byte) *Error {
	return Invalid("invalid_type", fieldAt(path), fmt.Sprintf("want %s, got %s", want, JSONKind(raw)))
}

func decodeValue(raw []byte, v reflect.Value, path string) *Error {
	raw = bytes.TrimSpace(raw)
	null := string(raw) == "null"
	t := v.Type()
	switch {
	case t == rawMessageType:
		v.SetBytes(bytes.Clone(raw))
		return nil
	case t == timeType:
		var s string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return wrongType(path, "an RFC 3339 time string such as \"2026-11-21T14:00:00Z\"", raw)
		}
		tm, err := ParseTime(s)
		if err != nil {
			return Invalid("invalid_time", fieldAt(path), err.Error())
		}
		v.Set(reflect.ValueOf(tm))
		return nil
	case t.Kind() == reflect.Pointer:
		if null {
			v.SetZero()
			return nil
		}
		p := reflect.New(t.Elem())
		if err := decodeValue(raw, p.Elem(), path); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.PointerTo(t).Implements(unmarshalerType):
		if null {
			return wrongType(path, "a value", raw)
		}
		err := v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(raw)
		if err == nil {
			return nil
		}
		var in *Error
		if !errors.As(err, &in) {
			return Invalid("invalid_value", fieldAt(path), err.Error())
		}
		if in.Field == "" || in.Field == "body" { // the value itself
			return Invalid(in.Code, fieldAt(path), in.Message)
		}
		if path == "" {
			return in
		}
		if strings.HasPrefix(in.Field, "[") {
			return in.At(path)
		}
		return in.At(path + ".")
	}
	switch t.Kind() {
	case reflect.Struct:
		return decodeStruct(raw, v, path)
	case reflect.Slice:
		if null {
			v.SetZero()
			return nil
		}
		var items []json.RawMessage
		if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
			return wrongType(path, "an array", raw)
		}
		s := reflect.MakeSlice(t, len(items), len(items))
		for i, item := range items {
			if err := decodeValue(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.String:
		var s string
		if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return wrongType(path, "a string", raw)
		}
		v.SetString(s)
		return nil
	case reflect.Bool:
		switch string(raw) {
		case "true", "false":
			v.SetBool(string(raw) == "true")
			return nil
		}
		return wrongType(path, "true or false", raw)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if JSONKind(raw) != "a number" {
			return wrongType(path, "an integer", raw)
		}
		n, err := strconv.ParseInt(string(raw), 10, t.Bits())
		if err != nil {
			return Invalid("invalid_type", fieldAt(path), fmt.Sprintf("want an integer that fits in %d bits, got %s", t.Bits(), Truncate(string(raw), 40)))
		}
		v.SetInt(n)
		return nil
	}
	panic(fmt.Sprintf("input.Decode: unsupported type %s at %s", t, fieldAt(path)))
}

func decodeStruct(raw []byte, v reflect.Value, path string) *Error {
	if raw[0] != '{' {
		return wrongType(path, "an object", raw)
	}
	fields := jsonFields(v.Type())
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return wrongType(path, "an object", raw)
	}
	seen := make(map[string]bool, len(fields))
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return Invalid("malformed_json", fieldAt(path), "malformed object")
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return Invalid("malformed_json", fieldAt(path), "malformed object")
		}
		p := fieldPath(path, key)
		i, known := fields[key]
		if !known {
			msg := fmt.Sprintf("unknown field %q", Truncate(key, 100))
			for name := range fields {
				if strings.EqualFold(name, key) {
					msg += fmt.Sprintf(" (field names are case-sensitive: did you mean %q?)", name)
				}
			}
			return Invalid("unknown_field", p, msg)
		}
		if seen[key] {
			return Invalid("duplicate_field", p, fmt.Sprintf("field %q is given twice", key))
		}
		seen[key] = true
		if err := decodeValue(val, v.Field(i), p); err != nil {
			return err
		}
	}
	return nil
}

// jsonFields maps a struct's JSON names to field indexes.
func jsonFields(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		m[name] = i
	}
	return m
}

// The range of times slotq reads: every time in it has a Unix time in
// nanoseconds, which is how the stores keep times.
var (
	MinTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

var rfc3339RE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-](\d{2}):(\d{2}))$`)

// ParseTime reads an RFC 3339 date and time with its offset, such as
// "2026-11-21T14:00:00Z" or "2026-11-21t15:00:00.5+01:00" (RFC 3339 allows
// lower-case t and z). The date must exist, the offset lie within ±23:59,
// and the time between MinTime and MaxTime.
func ParseTime(s string) (time.Time, error) {
	m := rfc3339RE.FindStringSubmatch(s)
	if m == nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time with an offset, such as \"2026-11-21T14:00:00Z\"", Truncate(s, 60))
	}
	if m[3] != "" {
		h, _ := strconv.Atoi(m[3])
		mi, _ := strconv.Atoi(m[4])
		if h > 23 || mi > 59 {
			return time.Time{}, fmt.Errorf("offset %s of %q is out of range (at most ±23:59)", m[2], s)
		}
	}
	t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a valid date and time", s)
	}
	if t.Before(MinTime) || !t.Before(MaxTime) {
		return time.Time{}, fmt.Errorf("%q is out of range: times lie from %d to %d", s, MinTime.Year(), MaxTime.Year()-1)
	}
	return t, nil
}

// Truncate shortens s to n bytes and marks the cut, so that an error
// message quoting bad input stays small.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
