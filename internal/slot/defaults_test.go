package slot

import (
	"reflect"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// WithDefaults sets each zero setting to its documented default and
// leaves a given one; Or takes each zero setting from the stack's
// defaults (MaxRunning aside: zero is no cap), the limit whole, the skew
// cut to a quarter of the queue's own tick, and keeps an empty list
// given (none).
func TestDefaultsFill(t *testing.T) {
	every := Config{
		Interval: 3 * time.Second, Skew: time.Millisecond, MaxAttempts: 7, Backoff: time.Minute,
		MaxBackoff: time.Hour, Retention: 48 * time.Hour, Targets: []string{"https://a.example/*"},
		AllowNetworks: []string{"10.0.0.0/8"}, TargetTimeout: 9 * time.Second, MaxRunning: 3,
		MaxSlowDowns: 4, RetryAfterDefault: 5 * time.Second, KeyLimits: []api.Limit{{Interval: time.Second}},
		BookAhead: 6, KeyBookAhead: 2,
	}
	stack := Config{
		Interval: 2 * time.Minute, Skew: time.Second, MaxAttempts: 9, Backoff: 2 * time.Second,
		MaxBackoff: 2 * time.Minute, Retention: 72 * time.Hour, Targets: []string{"https://b.example/*"},
		AllowNetworks: []string{"192.168.0.0/16"}, TargetTimeout: 8 * time.Second, MaxRunning: 5,
		MaxSlowDowns: 6, RetryAfterDefault: 7 * time.Second, KeyLimits: []api.Limit{{Interval: time.Minute}},
		BookAhead: 8, KeyBookAhead: 4,
	}
	uncapped := stack
	uncapped.MaxRunning = 0
	rate := api.Rate{N: 100, Per: time.Second} // a tick of 10ms
	byRate := uncapped
	byRate.Interval, byRate.Rate, byRate.Skew, byRate.Targets = 0, rate, 2500*time.Microsecond, []string{}
	for _, c := range []struct {
		name      string
		got, want Config
	}{
		{"defaults of nothing", Config{}.WithDefaults(), Config{
			Interval: DefaultInterval, Skew: DefaultSkew, MaxAttempts: DefaultMaxAttempts, Backoff: DefaultBackoff,
			MaxBackoff: DefaultMaxBackoff, Retention: DefaultRetention, TargetTimeout: DefaultTargetTimeout,
			MaxSlowDowns: DefaultMaxSlowDowns, RetryAfterDefault: DefaultRetryAfter,
		}},
		{"defaults keep what is given", every.WithDefaults(), every},
		{"the stack's fill nothing", Config{}.Or(stack), uncapped},
		{"the stack's keep what is given", every.Or(stack), every},
		{"a limit of its own, no targets", Config{Rate: rate, Targets: []string{}}.Or(stack), byRate},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s:\n got  %+v\n want %+v", c.name, c.got, c.want)
		}
	}
}
