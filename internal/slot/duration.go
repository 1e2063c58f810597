package slot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/pkg/api"
)

// Duration is a time.Duration that travels in JSON as a duration string
// with its unit ("500ms", "2s", "1h30m"). A JSON number is refused: 5
// could mean seconds or milliseconds, so it is never guessed.
type Duration time.Duration

// MarshalJSON writes d as a duration string, as api.Duration does.
func (d Duration) MarshalJSON() ([]byte, error) { return api.Duration(d).MarshalJSON() }

// UnmarshalJSON reads a duration string by ParseDuration. Its error is an
// *input.Error (code invalid_duration) whose Field is left for the caller
// to fill: input.Decode puts the path of the value there.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	bad := func(msg string) error { return &input.Error{Code: "invalid_duration", Message: msg} }
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return bad(`want a duration string such as "500ms"`)
		}
		v, err := ParseDuration(s)
		if err != nil {
			return bad(err.Error())
		}
		*d = Duration(v)
		return nil
	case len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9'):
		return bad(fmt.Sprintf("%s is a number; a duration is a string with its unit: give a string such as \"5s\" or \"500ms\"", input.Truncate(string(b), 40)))
	}
	return bad(fmt.Sprintf("want a duration string such as \"5s\" or \"500ms\", got %s", input.JSONKind(b)))
}

// ParseDuration reads a duration string as time.ParseDuration does
// ("1h30m", "500ms", "-2s"), more strictly: each unit at most once and the
// largest first, so "1h1h" and "30m1h" are refused rather than added up
// (api.ParseDuration).
func ParseDuration(s string) (time.Duration, error) { return api.ParseDuration(s) }

// configWire is ConfigUpdate on the wire as UnmarshalJSON reads it:
// api.ConfigUpdate's fields and tags, each value of a type whose errors
// name it (Duration, WireRate, limitJSON). Every setting is a pointer,
// so that a setting left out is told from one given as zero, and an
// empty list ("targets": [], none) from an absent one.
var configWire = wireOf(reflect.TypeFor[ConfigUpdate](), map[reflect.Type]reflect.Type{
	reflect.TypeFor[*time.Duration](): reflect.TypeFor[*Duration](),
	reflect.TypeFor[*api.Rate]():      reflect.TypeFor[*WireRate](),
	reflect.TypeFor[*[]api.Limit]():   reflect.TypeFor[*[]limitJSON](),
})

// wireOf is struct type t with each field whose type is a key of as given
// that type instead, with the same name and tag.
func wireOf(t reflect.Type, as map[reflect.Type]reflect.Type) reflect.Type {
	fields := make([]reflect.StructField, t.NumField())
	for i := range fields {
		f := t.Field(i)
		if w, ok := as[f.Type]; ok {
			f.Type = w
		}
		fields[i] = reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag}
	}
	return reflect.StructOf(fields)
}

// MarshalJSON writes durations as strings and leaves zero settings out:
// "the default", as UnmarshalJSON reads an absent one. The wire form is
// pkg/api's, whose Config has the same fields.
func (c Config) MarshalJSON() ([]byte, error) { return api.Config(c).MarshalJSON() }

// UnmarshalJSON reads a configuration strictly, by Decode: unknown fields
// (in any letter case) are errors and durations are strings with their
// unit. A setting left out is zero, its default; a setting given as zero
// is refused (ZeroSetting) unless zero has a meaning of its own
// (max_running: no cap), so that a zero is never silently read as "the
// default". Errors name the field relative to the configuration
// ("interval", "targets[2]").
func (c *Config) UnmarshalJSON(b []byte) error {
	var u ConfigUpdate
	if err := u.UnmarshalJSON(b); err != nil {
		return err
	}
	*c = u.Apply(Config{})
	return nil
}

// MarshalJSON writes the settings u gives, durations as strings, as
// pkg/api's ConfigUpdate (the same fields) does.
func (u ConfigUpdate) MarshalJSON() ([]byte, error) { return api.ConfigUpdate(u).MarshalJSON() }

// UnmarshalJSON reads the settings an update gives, by the rules of
// Config.UnmarshalJSON: a setting left out (or null) is nil, one given as
// zero is refused unless zero is a setting of its own (ZeroSetting).
func (u *ConfigUpdate) UnmarshalJSON(b []byte) error {
	w := reflect.New(configWire).Elem()
	if err := input.Decode(b, w.Addr().Interface()); err != nil {
		return err
	}
	var v ConfigUpdate
	vv := reflect.ValueOf(&v).Elem()
	for i := range vv.NumField() {
		f := w.Field(i)
		if f.IsNil() {
			continue
		}
		field, _, _ := strings.Cut(configWire.Field(i).Tag.Get("json"), ",")
		switch x := f.Interface().(type) {
		case *[]limitJSON:
			ls, err := limitsOf(field, x)
			if err != nil {
				return err
			}
			vv.Field(i).Set(reflect.ValueOf(ls))
			continue
		case *Duration, *int:
			if f.Elem().IsZero() {
				if err := ZeroSetting(field); err != nil {
					return err
				}
			}
		}
		vv.Field(i).Set(f.Convert(vv.Field(i).Type()))
	}
	if v.Interval != nil && *v.Interval < 0 {
		return input.Invalid("invalid_interval", "interval", fmt.Sprintf("interval must be at least %s", MinInterval))
	}
	if v.KeyMaxRunning != nil {
		n := *v.KeyMaxRunning
		if n == 0 {
			n = NoKeyCap // key_max_running 0: no cap
		} else if n < 0 {
			return input.Invalid("invalid_key_max_running", "key_max_running", fmt.Sprintf("key_max_running must be 1 to %d (1, one job of a key at a time, is the default) or 0 (no cap)", MaxKeyRunning))
		}
		v.KeyMaxRunning = &n
	}
	*u = v
	return nil
}

// limitsOf reads a list of limits given under field ("limits",
// "key_limits"); nil when none is given.
func limitsOf(field string, w *[]limitJSON) (*[]api.Limit, *input.Error) {
	if w == nil {
		return nil, nil
	}
	if len(*w) == 0 && field == "limits" {
		// Not "the default": a queue's limit is given whole or left out.
		return nil, input.Invalid("invalid_limit", field, fmt.Sprintf("limits is an empty list; give 1 to %d limits, or leave limits out for the default (interval %s)", MaxLimits, DefaultInterval))
	}
	ls := make([]api.Limit, len(*w))
	for i, l := range *w {
		if l.Interval != nil && *l.Interval <= 0 {
			return nil, input.Invalid("invalid_interval", fmt.Sprintf("%s[%d].interval", field, i), fmt.Sprintf("interval must be at least %s", MinInterval))
		}
		ls[i] = api.Limit{Burst: deref(l.Burst)}
		if l.Interval != nil {
			ls[i].Interval = time.Duration(*l.Interval)
		}
		if r := l.Rate.Rate(); r != nil {
			ls[i].Rate = *r
		}
		if r := l.Window.Rate(); r != nil {
			ls[i].Window = *r
		}
	}
	return &ls, nil
}

// WireRate is an api.Rate on the wire ("100/1m"), whose errors name the
// value (code invalid_rate): how a request that gives a rate or a window
// reads it.
type WireRate api.Rate

// MarshalJSON writes r as api.Rate does ("100/1m").
func (r WireRate) MarshalJSON() ([]byte, error) { return api.Rate(r).MarshalJSON() }

func (r *WireRate) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(bytes.TrimSpace(b), &s); err != nil {
		return &input.Error{Code: "invalid_rate", Message: fmt.Sprintf("want a rate string such as \"100/1m\", got %s", input.JSONKind(b))}
	}
	v, err := api.ParseRate(s)
	if err != nil {
		return &input.Error{Code: "invalid_rate", Message: err.Error()}
	}
	*r = WireRate(v)
	return nil
}

// Rate returns r as an api.Rate; nil for nil.
func (r *WireRate) Rate() *api.Rate {
	if r == nil {
		return nil
	}
	v := api.Rate(*r)
	return &v
}

// limitJSON is an api.Limit on the wire, decoded strictly (by Decode, so
// errors name the value: "limits[1].burst").
type limitJSON struct {
	Interval *Duration `json:"interval,omitempty"`
	Rate     *WireRate `json:"rate,omitempty"`
	Burst    *int      `json:"burst,omitempty"`
	Window   *WireRate `json:"window,omitempty"`
}

func deref(n *int) int {
	if n == nil {
		return 0
	}
	return *n
}
