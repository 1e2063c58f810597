package main

import (
	"bytes"
	"strings"
	"testing"
)

// `slotq demo` runs each form of a limit: its records carry the job's
// re-tickets, and its summary judges the starts by the form.
func TestDemoForms(t *testing.T) {
	for _, form := range [][]string{
		{"--rate", "100/1s", "--burst", "3"},
		{"--window", "5/100ms"},
	} {
		t.Run(form[0], func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"demo", "--json", "--producers", "2", "--jobs", "6", "--workers", "12", "--queue", "fq"}, form...)
			if code := run(t.Context(), args, &stdout, &stderr); code != exitOK {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
			}
			lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
			if len(lines) != 12 {
				t.Fatalf("%d records, want 12:\n%s", len(lines), stdout.String())
			}
			for _, l := range lines {
				checkRecord(t, []byte(l), "fq")
			}
			if !strings.Contains(stderr.String(), "0 spacing violations at the gate") {
				t.Errorf("stderr: %s", stderr.String())
			}
		})
	}
}

// Bad limit flags are refused before anything runs, naming the flag.
func TestDemoFormFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--rate", "100"}, `invalid argument "100" for "--rate"`},
		{[]string{"--rate", "100/60"}, "duration with its unit"},
		{[]string{"--window", "0/1s"}, "positive integer"},
		{[]string{"--burst", "2"}, "--burst goes with --rate"},
		{[]string{"--rate", "10/1s", "--window", "10/1s"}, "one of --rate and --window"},
		{[]string{"--rate", "10/1s", "--burst", "1000"}, "burst must be between 0 and 100"},
		{[]string{"--rate", "5000/1s"}, "more than one start per 1ms"},
		{[]string{"--interval", "10ms", "--window", "10/1s"}, "give one of --interval, --rate and --window"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), append([]string{"demo"}, tt.args...), &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("demo %v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), exitUsage, tt.want)
		}
	}
}
