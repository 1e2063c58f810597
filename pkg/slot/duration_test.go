package slot

import (
	"errors"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/input"
)

func TestDurationJSON(t *testing.T) {
	good := map[string]time.Duration{
		`"500ms"`: 500 * time.Millisecond, `"1h30m"`: 90 * time.Minute, `250`: 250 * time.Millisecond,
		`1.5`: 1500 * time.Microsecond, `"-1s"`: -time.Second,
	}
	for in, want := range good {
		var d Duration
		if err := d.UnmarshalJSON([]byte(in)); err != nil || time.Duration(d) != want {
			t.Errorf("Duration(%s) = %v, %v; want %v", in, time.Duration(d), err, want)
		}
	}
	for _, in := range []string{`true`, `1e309`, `9.3e15`, `-9.3e15`, `"9999999999h"`, `"soon"`, `null`, `{}`, `[]`, `""`} {
		var d Duration
		err := d.UnmarshalJSON([]byte(in))
		var ie *input.Error
		if !errors.As(err, &ie) || ie.Code != "invalid_duration" {
			t.Errorf("Duration(%s) = %v, %v; want an invalid_duration Error", in, time.Duration(d), err)
		}
	}
}

// Config errors name the setting by its path; unknown settings are refused
// in any letter case.
func TestDecodeConfigPaths(t *testing.T) {
	tests := []struct{ body, code, field string }{
		{`{"interval":true}`, "invalid_duration", "interval"},
		{`{"interval":"1s","Interval":"2s"}`, "unknown_field", "Interval"},
		{`{"INTERVAL":"1s"}`, "unknown_field", "INTERVAL"},
		{`{"targets":["a",7]}`, "invalid_type", "targets[1]"},
		{`{"targets":"https://x/*"}`, "invalid_type", "targets"},
		{`{"max_attempts":1.5}`, "invalid_type", "max_attempts"},
		{`{"max_attempts":99999999999999999999}`, "invalid_type", "max_attempts"},
		{`{"skew":"1s","skew":"2s"}`, "duplicate_field", "skew"},
		{`{"interval":"0s"}`, "invalid_interval", "interval"},
		{`{"a.b":1}`, "unknown_field", `["a.b"]`},
		{`"1s"`, "invalid_type", "body"},
		{`{"interval":null}`, "", ""},
	}
	for _, tt := range tests {
		var c Config
		err := input.Decode([]byte(tt.body), &c)
		if tt.code == "" {
			if err != nil {
				t.Errorf("Decode(%s) = %v; want ok", tt.body, err)
			}
			continue
		}
		var ie *input.Error
		if !errors.As(err, &ie) || ie.Code != tt.code || ie.Field != tt.field {
			t.Errorf("Decode(%s) = %v; want %s on %s", tt.body, err, tt.code, tt.field)
		}
	}
}
