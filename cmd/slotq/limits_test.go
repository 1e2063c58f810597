package main

import (
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/pkg/api"
)

// A queue's limit in each form through create and configure, and back in
// the words the user wrote it in create's answer, the listing and stats.
func TestLimitCommands(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	perMin := api.Rate{N: 100, Per: time.Minute}

	golden(t, "create-rate", c.ok("queues", "create", "crawls", "--rate", "100/1m", "--burst", "10"))
	var q engine.Queue
	c.okJSON(&q, "queues", "configure", "crawls", "--burst", "20")
	if q.Config.Rate != perMin || q.Config.Burst != 20 {
		t.Errorf("configure --burst 20: %+v; want the rate kept, its burst 20", q.Config)
	}
	c.okJSON(&q, "queues", "configure", "crawls", "--burst", "0")
	if q.Config.Rate != perMin || q.Config.Burst != 0 {
		t.Errorf("configure --burst 0: %+v; want the rate kept, no burst", q.Config)
	}
	c.okJSON(&q, "queues", "configure", "crawls", "--window", "5000/1h")
	if !q.Config.Rate.IsZero() || q.Config.Window != (api.Rate{N: 5000, Per: time.Hour}) || q.Config.Interval != 0 {
		t.Errorf("configure --window: %+v; want the window alone", q.Config)
	}
	c.okJSON(&q, "queues", "configure", "crawls", "--limit", "rate 10/1s burst 2", "--limit", "window 1000/1h")
	want := []api.Limit{{Rate: api.Rate{N: 10, Per: time.Second}, Burst: 2}, {Window: api.Rate{N: 1000, Per: time.Hour}}}
	if !reflect.DeepEqual(q.Config.Limits, want) || !q.Config.Window.IsZero() {
		t.Errorf("configure --limit twice: %+v; want limits %+v", q.Config, want)
	}
	// What get prints can be given back: several limits in one --limit.
	c.okJSON(&q, "queues", "configure", "crawls", "--limit", "rate 10/1s burst 2; window 1000/1h")
	if !reflect.DeepEqual(q.Config.Limits, want) {
		t.Errorf("configure --limit 'a; b': %+v; want limits %+v", q.Config, want)
	}
	c.okJSON(&q, "queues", "configure", "crawls", "--interval", "250ms")
	if q.Config.Interval != 250*time.Millisecond || q.Config.Limits != nil {
		t.Errorf("configure --interval: %+v; want the interval alone", q.Config)
	}
	c.ok("queues", "configure", "crawls", "--limit", "rate 10/1s burst 2", "--limit", "window 1000/1h")
	golden(t, "queues-limits", c.ok("queues", "list"))
	golden(t, "stats-limits", c.ok("queues", "stats", "crawls"))
}

// Bad limits are refused before anything is sent, naming the flag: the
// stack here is a closed port, which any call would find.
func TestLimitFlagsRefusedBeforeSending(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := cli{t: t, endpoint: "http://" + ln.Addr().String()}
	ln.Close()
	tests := []exitCase{
		{"rate without a period", []string{"queues", "create", "q", "--rate", "100"}, 2, `invalid argument "100" for "--rate" flag: "100" is not a rate`},
		{"window period without unit", []string{"queues", "create", "q", "--window", "100/60"}, 2, `for "--window" flag`},
		{"limit in no words", []string{"queues", "create", "q", "--limit", "rate 10/1s burst"}, 2, `invalid argument "rate 10/1s burst" for "--limit" flag`},
		{"two forms", []string{"queues", "create", "q", "--interval", "1s", "--rate", "1/1s"}, 2, "give one of --interval, --rate (with --burst), --window and --limit, not --interval and --rate"},
		{"limit beside a rate", []string{"queues", "configure", "q", "--rate", "1/1s", "--limit", "window 5/1m"}, 2, "not --rate and --limit"},
		{"burst without a rate", []string{"queues", "create", "q", "--burst", "3"}, 2, "--burst goes with --rate"},
		{"burst with a window", []string{"queues", "configure", "q", "--window", "5/1m", "--burst", "3"}, 2, "--burst goes with --rate"},
		{"burst without a rate on reset", []string{"queues", "configure", "q", "--reset", "--burst", "3"}, 2, "--burst goes with --rate"},
		{"burst too large", []string{"queues", "create", "q", "--rate", "100/1m", "--burst", "101"}, 1, "slotq queues create: invalid_burst (config.burst): --burst 101: burst must be between 0 and 100"},
		{"burst alone too large", []string{"queues", "configure", "q", "--burst", "101"}, 1, "slotq queues configure: invalid_burst (config.burst): --burst 101: burst must be between 0 and 100"},
		{"negative burst", []string{"queues", "configure", "q", "--burst", "-1"}, 1, "invalid_burst (config.burst): --burst -1"},
		{"rate too fast", []string{"queues", "create", "q", "--rate", "2000/1s"}, 1, "slotq queues create: invalid_rate (config.rate): --rate 2000/1s: rate 2000/1s is more than one start per 1ms"},
		{"rate period too long", []string{"queues", "create", "q", "--rate", "10/745h"}, 1, "invalid_rate (config.rate): --rate 10/745h: rate 10/745h: the period must be at most 744h"},
		{"window too many", []string{"queues", "configure", "q", "--window", "100001/745h"}, 1, "invalid_window (config.window): --window 100001/745h"},
		{"window too many starts", []string{"queues", "configure", "q", "--window", "100001/31h"}, 1, "invalid_window (config.window): --window 100001/31h: window 100001/31h: a window allows at most 100000 starts"},
		{"second limit's burst", []string{"queues", "create", "q", "--limit", "rate 10/1s", "--limit", "rate 100/1m burst 101"}, 1,
			"slotq queues create: invalid_burst (config.limits[1].burst): --limit 'rate 100/1m burst 101': burst must be between 0 and 100"},
		{"a limit's interval", []string{"queues", "create", "q", "--limit", "window 10/1s; interval 100us"}, 1, "invalid_interval (config.limits[1].interval): --limit 'interval 100µs'"},
		{"too many limits", []string{"queues", "create", "q", "--limit", "rate 10/1s", "--limit", "window 100/1m; window 1000/1h", "--limit", "interval 1ms"}, 1,
			"slotq queues create: too_many_limits (config.limits): --limit: 4 limits; a queue keeps at most 3 at once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.exits(tt.args, tt.code, tt.stderr)
			if _, errOut, _ := c.run(tt.args...); strings.Contains(errOut, "nothing answers") {
				t.Errorf("sent: %q", errOut)
			}
		})
	}
}
