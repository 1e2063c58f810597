package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/slotq/slotq/internal/bench/workload"
	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/pkg/api"
)

// The demo's flags fill the workload's config: a limit in each form, and
// whether --interval and --workers were given (internal/bench/workload
// runs each form, and refuses two).
func TestDemoFlags(t *testing.T) {
	tests := []struct {
		args []string
		want func(*workload.Config)
	}{
		{nil, func(*workload.Config) {}},
		{[]string{"--rate", "100/1s", "--burst", "3"}, func(c *workload.Config) { c.Rate, c.Burst = api.Rate{N: 100, Per: time.Second}, 3 }},
		{[]string{"--window", "5/100ms", "--queue", "fq"}, func(c *workload.Config) { c.Window, c.Queue = api.Rate{N: 5, Per: 100 * time.Millisecond}, "fq" }},
		{[]string{"--interval", "20ms", "--workers", "4"}, func(c *workload.Config) { c.Interval, c.IntervalSet, c.WorkersSet = 20*time.Millisecond, true, true }},
		{[]string{"--store", "dynamodb-model", "--key-rate", "2/1s", "--keys", "3"}, func(c *workload.Config) {
			c.Store, c.KeyRate, c.Keys = workload.StoreModel, api.Rate{N: 2, Per: time.Second}, 3
		}},
	}
	for _, tt := range tests {
		fs := pflag.NewFlagSet("demo", pflag.ContinueOnError)
		cfg := demoFlags(fs, workload.DefaultDemo)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		want := workload.DefaultDemo
		want.Store = workload.StoreEmbedded
		tt.want(&want)
		if got := cfg(); !reflect.DeepEqual(got, want) {
			t.Errorf("demo %v:\n got %+v\nwant %+v", tt.args, got, want)
		}
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
		if code := run(t.Context(), append([]string{"demo"}, tt.args...), &stdout, &stderr); code != clikit.ExitUsage || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("demo %v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), clikit.ExitUsage, tt.want)
		}
	}
}
