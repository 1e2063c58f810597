package console

import (
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// A queue whose limit is a rate or a window: the pages say it in words,
// and the timeline judges the starts by the form's rule (slot.Breaches),
// not by the least gap of an interval: two starts 100ms apart keep "at
// most 2 in any 1s", a third within the second breaks it.
func TestTimelineJudgesTheForm(t *testing.T) {
	at := func(ms ...int) []time.Duration {
		var out []time.Duration
		for _, m := range ms {
			out = append(out, time.Duration(m)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		name   string
		cfg    api.Config
		limits string          // the queue's limits as the pages say them
		starts []time.Duration // gate starts after t0+1s
		want   []string
		not    []string
	}{
		{"window kept", api.Config{Window: api.Rate{N: 2, Per: time.Second}, Skew: 10 * time.Millisecond}, "window 2/1s", at(0, 100, 1000, 1100),
			[]string{"✓ No run of starts breaks at most 2 in any 1s (less the skew, 10ms)", "1s: at most 2 starts in any span this long", "40 average gaps (20s)"},
			[]string{"gapbad", "interval − skew"}},
		{"window broken", api.Config{Window: api.Rate{N: 2, Per: time.Second}, Skew: 10 * time.Millisecond}, "window 2/1s", at(0, 100, 500, 1200),
			[]string{"✗ 1 starts break at most 2 in any 1s (less the skew, 10ms)", `class="start gapbad" data-job="s2"`, "✗ 3 in 500ms"},
			[]string{`class="start gapbad" data-job="s3"`}},
		{"burst kept", api.Config{Rate: api.Rate{N: 10, Per: time.Second}, Burst: 2, Skew: 10 * time.Millisecond}, "rate 10/1s burst 2", at(0, 0, 0, 300),
			[]string{"✓ No run of starts breaks rate 10/1s, burst 2", "100ms: one start per this on average (rate 10/1s), 2 more at once after an idle time"},
			[]string{"gapbad"}},
		{"burst broken", api.Config{Rate: api.Rate{N: 10, Per: time.Second}, Burst: 2, Skew: 10 * time.Millisecond}, "rate 10/1s burst 2", at(0, 0, 0, 0),
			[]string{"✗ 1 starts break rate 10/1s, burst 2", `class="start gapbad" data-job="s3"`, "✗ 4 in 0ms"}, nil},
		{"two limits", api.Config{Limits: []api.Limit{{Rate: api.Rate{N: 10, Per: time.Second}}, {Window: api.Rate{N: 3, Per: time.Minute}}}, Skew: 10 * time.Millisecond}, "rate 10/1s; window 3/1m", at(0, 100, 200, 300),
			[]string{"✗ 1 starts break rate 10/1s; at most 3 in any 1m", `class="start gapbad" data-job="s3"`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, h := fixture(t)
			f.addQueue("reports", tt.cfg) // a name the fake lists
			for i, d := range tt.starts {
				g := t0.Add(time.Second + d)
				id := "s" + string(rune('0'+i))
				f.starts["reports"] = append(f.starts["reports"], api.Start{JobID: id, Ticket: int64(i + 1), Attempt: 1, SlotAt: g, GateAt: g, StartedAt: g})
			}
			_, body := get(t, h, "/queues/reports")
			if !strings.Contains(body, "<dt>limits</dt><dd>"+tt.limits+"</dd>") {
				t.Errorf("queue page lacks the limits %q", tt.limits)
			}
			wantPage(t, "queue page", body, tt.want, tt.not)
			if _, list := get(t, h, "/"); !strings.Contains(list, "<td>"+tt.limits+" / 10ms</td>") {
				t.Errorf("queues page lacks the limits %q:\n%s", tt.limits, list)
			}
		})
	}
}
