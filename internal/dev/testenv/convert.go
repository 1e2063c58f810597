package testenv

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
)

// Converts holds convert, the one converter between a server's type S and
// its pkg/api type D (or back), to both types' fields, so that a field
// added to either and not carried fails the test that calls it:
//
//   - every field of S, each set alone to zero in a value whose fields
//     are all set, changes what convert answers;
//   - every field of D is set in what convert answers for that value;
//   - both values read the same as JSON (names, shapes and values).
//
// The walk goes into structs, pointers and a slice's first element, down
// to fields of other kinds and to structs with no exported field
// (time.Time), which count as one. oneSided names the fields that stand on
// one side only, on purpose (the stores' fields the wire does not carry),
// as the struct's type and the field, "slot.State.Line": each must name a
// field the walk meets.
func Converts[S, D any](t *testing.T, convert func(S) D, oneSided ...string) {
	t.Helper()
	full := func() S {
		var s S
		fill(reflect.ValueOf(&s).Elem(), new(int))
		return s
	}
	skip := map[string]bool{}
	for _, f := range oneSided {
		skip[f] = false
	}
	oneSide := func(declared string) bool {
		_, ok := skip[declared]
		if ok {
			skip[declared] = true
		}
		return ok
	}
	want := convert(full())
	src := full()
	walk(reflect.ValueOf(&src).Elem(), "", oneSide, func(path string, _ reflect.Value) {
		s := full()
		walk(reflect.ValueOf(&s).Elem(), "", oneSide, func(p string, v reflect.Value) {
			if p == path {
				v.SetZero()
			}
		})
		if reflect.DeepEqual(convert(s), want) {
			t.Errorf("%T's %s is lost on the way to %T: the converter does not carry it", src, path, want)
		}
	})
	walk(reflect.ValueOf(&want).Elem(), "", oneSide, func(path string, v reflect.Value) {
		if v.IsZero() {
			t.Errorf("%T's %s is left empty by the converter from %T", want, path, src)
		}
	})
	for f, used := range skip {
		if !used {
			t.Errorf("%s, said to stand on one side only, is no field of %T or %T", f, src, want)
		}
	}
	a, b := jsonValue(t, src), jsonValue(t, want)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("%T and %T read differently as JSON:\n%s\n%s", src, want, a, b)
	}
}

// jsonValue is v as JSON, read back into plain values: objects compare
// by their fields, whatever the order they were written in.
func jsonValue(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%T as JSON: %v", v, err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatalf("%T's JSON: %v", v, err)
	}
	b, _ = json.Marshal(x) // maps are written by sorted key
	return string(b)
}

// walk calls visit for each field of v (addressable) the walk reaches
// (see Converts), with its path; it leaves out the fields, and what lies
// below them, that prune says no to by their struct's type and name.
func walk(v reflect.Value, path string, prune func(declared string) bool, visit func(path string, v reflect.Value)) {
	switch {
	case v.Kind() == reflect.Pointer && !v.IsNil():
		walk(v.Elem(), path, prune, visit)
	case v.Kind() == reflect.Slice && v.Len() > 0 && v.Type() != rawMessage:
		walk(v.Index(0), path+"[0]", prune, visit)
	case v.Kind() == reflect.Struct && exported(v.Type()):
		for i := range v.NumField() {
			f := v.Type().Field(i)
			d := v.Type().String() + "." + f.Name
			if !f.IsExported() || prune(d) {
				continue
			}
			p := f.Name
			if path != "" {
				p = path + "." + f.Name
			}
			walk(v.Field(i), p, prune, visit)
		}
	default:
		visit(path, v)
	}
}

func exported(t reflect.Type) bool {
	return slices.ContainsFunc(slices.Collect(t.Fields()), reflect.StructField.IsExported)
}

var (
	rawMessage = reflect.TypeFor[json.RawMessage]()
	timeType   = reflect.TypeFor[time.Time]()
)

// fill sets every exported field of v, and every field below it, to a
// value of its own (n counts them), so that no two fields read alike.
func fill(v reflect.Value, n *int) {
	*n++
	switch {
	case v.Type() == rawMessage:
		v.SetBytes(fmt.Appendf(nil, `{"n":%d}`, *n))
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(time.Date(2026, 1, 1, 0, 0, *n, 0, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Slice:
		if v.Type() == rawMessage {
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), n)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), n)
		}
	case reflect.Map:
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, n)
		fill(e, n)
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(k, e)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	}
}
