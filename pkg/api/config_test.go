package api

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestConfigUpdateMirrorsConfig holds ConfigUpdate to Config: the same
// settings in the same order, each a pointer to Config's type, each with
// its snake_case name on the wire. A setting added to one side only fails
// here (Update, Apply and the JSON go field by field).
func TestConfigUpdateMirrorsConfig(t *testing.T) {
	ct, ut := reflect.TypeFor[Config](), reflect.TypeFor[ConfigUpdate]()
	for i := range max(ct.NumField(), ut.NumField()) {
		switch {
		case i >= ct.NumField():
			t.Errorf("ConfigUpdate.%s has no Config field", ut.Field(i).Name)
			continue
		case i >= ut.NumField():
			t.Errorf("Config.%s has no ConfigUpdate field", ct.Field(i).Name)
			continue
		}
		c, u := ct.Field(i), ut.Field(i)
		if c.Name != u.Name || u.Type != reflect.PointerTo(c.Type) {
			t.Errorf("field %d: Config.%s %s, ConfigUpdate.%s %s; want ConfigUpdate.%s *%s", i, c.Name, c.Type, u.Name, u.Type, c.Name, c.Type)
		}
		if want := snake(c.Name) + ",omitempty"; u.Tag.Get("json") != want {
			t.Errorf("ConfigUpdate.%s: json tag %q, want %q", u.Name, u.Tag.Get("json"), want)
		}
	}
}

var wordStart = regexp.MustCompile(`([a-z])([A-Z])`)

// snake is a Go field's name in snake_case: MaxSlowDowns, max_slow_downs.
func snake(s string) string { return strings.ToLower(wordStart.ReplaceAllString(s, "${1}_${2}")) }

// TestConfigRoundTripsEveryField sets every setting of a Config and reads
// it back through its update and its JSON: a setting that Update, Apply,
// MarshalJSON or UnmarshalJSON dropped would come back zero.
func TestConfigRoundTripsEveryField(t *testing.T) {
	var c Config
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Interface().(type) {
		case time.Duration:
			f.SetInt(int64(i+1) * int64(time.Millisecond))
		case int:
			f.SetInt(int64(i + 1))
		case Rate:
			f.Set(reflect.ValueOf(Rate{N: i + 1, Per: time.Second}))
		case []Limit:
			f.Set(reflect.ValueOf([]Limit{{Rate: Rate{N: i + 1, Per: time.Minute}, Burst: 2}, {Window: Rate{N: 3, Per: time.Hour}}}))
		case []string:
			f.Set(reflect.ValueOf([]string{"s" + v.Type().Field(i).Name}))
		default:
			t.Fatalf("Config.%s of type %s: teach the test to set it", v.Type().Field(i).Name, f.Type())
		}
	}
	if got := c.Update().Apply(Config{}); !reflect.DeepEqual(got, c) {
		t.Errorf("Update().Apply:\n got %+v\nwant %+v", got, c)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var got Config
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Errorf("round trip through %s:\n got %+v\nwant %+v", b, got, c)
	}
}
