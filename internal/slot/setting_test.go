package slot

import (
	"reflect"
	"strings"
	"testing"

	"github.com/slotq/slotq/pkg/api"
)

// TestSettings holds Settings to api.Config: one setting per field, in
// its order, named by api.ConfigUpdate's JSON tag, its flag that name in
// the CLI's spelling, and its default within its range.
func TestSettings(t *testing.T) {
	ct, ut := reflect.TypeFor[api.Config](), reflect.TypeFor[api.ConfigUpdate]()
	if len(Settings) != ct.NumField() {
		t.Fatalf("%d settings for api.Config's %d fields", len(Settings), ct.NumField())
	}
	for i, s := range Settings {
		if f := ct.Field(i); s.Field != f.Name {
			t.Errorf("setting %d is %s; api.Config's field %d is %s", i, s.Field, i, f.Name)
		}
		if tag, _, _ := strings.Cut(ut.Field(i).Tag.Get("json"), ","); s.Name != tag {
			t.Errorf("%s: name %q; api.ConfigUpdate's tag is %q", s.Field, s.Name, tag)
		}
		if flag := strings.ReplaceAll(strings.TrimSuffix(s.Name, "s"), "_", "-"); s.Flag != strings.ReplaceAll(s.Name, "_", "-") && s.Flag != flag {
			t.Errorf("%s: flag %q; want the name in the CLI's spelling", s.Name, s.Flag)
		}
		if got, _ := SettingNamed(s.Name); got.Field != s.Field {
			t.Errorf("SettingNamed(%q) is %q", s.Name, got.Field)
		}
		if s.Zero == "" {
			t.Errorf("%s: no word on what zero means", s.Name)
		}
		if s.scalar() && !s.Limit && s.Name != "skew" && s.Name != "key_max_running" && s.Rule == "" {
			t.Errorf("%s: a number with no rule", s.Name)
		}
		if s.Default != 0 {
			c := Config{}.WithDefaults()
			if got := s.Get(api.Config(c)); got != s.Default {
				t.Errorf("%s: WithDefaults gives %d; its default is %d", s.Name, got, s.Default)
			}
			if s.Default < s.Min || s.Max != 0 && s.Default > s.Max {
				t.Errorf("%s: default %d outside %d to %d", s.Name, s.Default, s.Min, s.Max)
			}
		}
	}
}

// TestSettingsChecked gives each setting with a rule a value beyond it:
// Validate names that setting, and ZeroSetting refuses an explicit zero
// of each setting whose zero is not a setting of its own.
func TestSettingsChecked(t *testing.T) {
	for _, s := range Settings {
		if s.Rule == "" {
			continue
		}
		c := api.Config(Config{}.WithDefaults())
		bad := s.Min - 1
		if s.Name == "max_backoff" {
			bad = int64(c.Backoff) - 1
		}
		s.Set(&c, bad)
		err := Config(c).Validate()
		if err == nil || !strings.Contains(err.Error(), s.Name+" "+s.Rule) {
			t.Errorf("%s %d: Validate says %v; want %q", s.Name, bad, err, s.Name+" "+s.Rule)
		}
		if z := ZeroSetting(s.Name); (z == nil) != s.ZeroGiven {
			t.Errorf("%s: ZeroSetting %v, zero given %v", s.Name, z, s.ZeroGiven)
		}
	}
}
