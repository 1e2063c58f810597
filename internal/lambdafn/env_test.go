package lambdafn

import (
	"strings"
	"testing"
	"time"
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
