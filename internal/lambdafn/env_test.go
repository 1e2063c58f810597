package lambdafn

import (
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

func TestLoad(t *testing.T) {
	good := map[string]string{
		EnvTable: "slotq-Table", EnvQueueURL: "https://sqs.us-east-1.amazonaws.com/1/slots",
		EnvDefaultInterval: "2s", EnvAllowedTargets: "https://api.example.com/*, lambda:send-email",
		EnvWorkerTimeout: "120",
	}
	tests := []struct {
		name    string
		spec    Spec
		change  map[string]string
		wantErr string // the variable the error must name
	}{
		{name: "enqueue", spec: Enqueue},
		{name: "worker ignores what it does not read", spec: Worker, change: map[string]string{EnvDefaultInterval: "nonsense"}},
		{name: "no table", spec: Worker, change: map[string]string{EnvTable: ""}, wantErr: EnvTable},
		{name: "queue url not a url", spec: Resume, change: map[string]string{EnvQueueURL: "slots"}, wantErr: EnvQueueURL},
		{name: "bad interval", spec: Admin, change: map[string]string{EnvDefaultInterval: "soon"}, wantErr: EnvDefaultInterval},
		{name: "negative interval", spec: Admin, change: map[string]string{EnvDefaultInterval: "-1s"}, wantErr: EnvDefaultInterval},
		{name: "interval repeats a unit", spec: Admin, change: map[string]string{EnvDefaultInterval: "1s1s"}, wantErr: EnvDefaultInterval},
		{name: "interval below the floor", spec: Enqueue, change: map[string]string{EnvDefaultInterval: "500us"}, wantErr: EnvDefaultInterval},
		{name: "bad skew", spec: Enqueue, change: map[string]string{EnvDefaultSkew: "a little"}, wantErr: EnvDefaultSkew},
		{name: "skew as long as the interval", spec: Admin, change: map[string]string{EnvDefaultSkew: "2s"}, wantErr: EnvDefaultInterval},
		{name: "default limit malformed", spec: Admin, change: map[string]string{EnvDefaultLimit: "rate 100 per minute"}, wantErr: EnvDefaultLimit},
		{name: "default limit's burst out of range", spec: Enqueue, change: map[string]string{EnvDefaultLimit: "rate 100/1m burst 101"}, wantErr: EnvDefaultLimit},
		{name: "default limit too fast", spec: Admin, change: map[string]string{EnvDefaultLimit: "window 10/5ms"}, wantErr: EnvDefaultLimit},
		{name: "default limits too many", spec: Admin, change: map[string]string{EnvDefaultLimit: "rate 1/1s; rate 10/1m; window 100/1h; window 1000/24h"}, wantErr: EnvDefaultLimit},
		{name: "default limit's second bad", spec: Admin, change: map[string]string{EnvDefaultLimit: "rate 10/1s; window 0/1h"}, wantErr: EnvDefaultLimit},
		{name: "default limit under the skew", spec: Admin, change: map[string]string{EnvDefaultLimit: "rate 100/1s", EnvDefaultSkew: "10ms"}, wantErr: EnvDefaultLimit},
		{name: "worker ignores the default limit", spec: Worker, change: map[string]string{EnvDefaultLimit: "nonsense"}},
		{name: "bad target", spec: Enqueue, change: map[string]string{EnvAllowedTargets: "ftp://x"}, wantErr: EnvAllowedTargets},
		{name: "empty targets", spec: Enqueue, change: map[string]string{EnvAllowedTargets: ""}},
		{name: "default interval", spec: Enqueue, change: map[string]string{EnvDefaultInterval: ""}},
		{name: "no worker timeout", spec: Worker, change: map[string]string{EnvWorkerTimeout: ""}, wantErr: EnvWorkerTimeout},
		{name: "worker timeout not seconds", spec: Resume, change: map[string]string{EnvWorkerTimeout: "2m"}, wantErr: EnvWorkerTimeout},
		{name: "worker timeout too short for a default target", spec: Admin, change: map[string]string{EnvWorkerTimeout: "30"}, wantErr: EnvWorkerTimeout},
		{name: "worker timeout beyond Lambda's", spec: Enqueue, change: map[string]string{EnvWorkerTimeout: "901"}, wantErr: EnvWorkerTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range good {
				env[k] = v
			}
			for k, v := range tt.change {
				env[k] = v
			}
			cfg, err := Load(tt.spec, func(k string) string { return env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Table != "slotq-Table" {
				t.Errorf("table %q", cfg.Table)
			}
			if cfg.WorkerTimeout != 2*time.Minute {
				t.Errorf("worker timeout %v", cfg.WorkerTimeout)
			}
			if tt.spec.Reads(EnvDefaultInterval) && env[EnvDefaultInterval] == "2s" && cfg.Defaults.Interval != 2*time.Second {
				t.Errorf("interval %v", cfg.Defaults.Interval)
			}
			if tt.spec.Reads(EnvAllowedTargets) && env[EnvAllowedTargets] != "" && len(cfg.Defaults.Targets) != 2 {
				t.Errorf("targets %v", cfg.Defaults.Targets)
			}
		})
	}
}

// SLOTQ_DEFAULT_LIMIT gives queues created without a limit theirs, in the
// form it was written in, in the place of SLOTQ_DEFAULT_INTERVAL.
func TestLoadDefaultLimit(t *testing.T) {
	tests := []struct {
		limit string
		want  string // the defaults' limits, in words
		form  func(slot.Config) bool
	}{
		{"", "interval 2s", func(c slot.Config) bool { return c.Interval == 2*time.Second }},
		{"rate 100/1m burst 10", "rate 100/1m burst 10", func(c slot.Config) bool {
			return c.Interval == 0 && c.Rate == api.Rate{N: 100, Per: time.Minute} && c.Burst == 10 && c.Limits == nil
		}},
		{"window 5000/1h", "window 5000/1h", func(c slot.Config) bool { return c.Interval == 0 && c.Window == api.Rate{N: 5000, Per: time.Hour} }},
		{"interval 250ms", "interval 250ms", func(c slot.Config) bool { return c.Interval == 250*time.Millisecond }},
		{" rate 10/1s burst 2 ;window 1000/1h", "rate 10/1s burst 2; window 1000/1h", func(c slot.Config) bool {
			return c.Interval == 0 && c.Rate.IsZero() && len(c.Limits) == 2
		}},
	}
	for _, tt := range tests {
		t.Run(tt.limit, func(t *testing.T) {
			env := map[string]string{
				EnvTable: "slotq-Table", EnvQueueURL: "https://sqs.us-east-1.amazonaws.com/1/slots", EnvWorkerTimeout: "120",
				EnvDefaultInterval: "2s", EnvDefaultLimit: tt.limit,
			}
			for _, spec := range []Spec{Enqueue, Admin} {
				cfg, err := Load(spec, func(k string) string { return env[k] })
				if err != nil {
					t.Fatal(err)
				}
				if got := cfg.Defaults.LimitList().String(); got != tt.want || !tt.form(cfg.Defaults) {
					t.Errorf("%s: defaults %s, %+v; want %s", spec.Function, got, cfg.Defaults, tt.want)
				}
			}
		})
	}
}
