package console

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/slotq/slotq/internal/cli/clikit"
	starts "github.com/slotq/slotq/internal/cli/timeline"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// start is one attempt's start on the timeline (starts.Start: At the
// time the handler began, Gate the start the gate reserved, the time the
// spacing guarantee counts by; a job's history records the reserved
// start, so there the two are one; a start line has both), and what the
// page marks it with.
type start struct {
	starts.Start
	// Reticketed: the job took a new ticket (passed at the gate, a
	// missed slot, a pause) before this start. Retry: an attempt after
	// the first, or a run again on request.
	Reticketed bool
	Retry      bool
	// Gap is the time from the gate's start before it on the timeline to
	// its own; GapBad marks a start that breaks the queue's limit, which
	// the gate makes impossible: for an interval, a gap below interval −
	// skew; for a rate or a window, a run of starts that slot.Breaches
	// finds too close, SpanN starts (this one the last) in Span. (Two
	// handlers may begin closer than that when the first woke a little
	// late: the gate counts reserved starts, not wake-ups.)
	Gap    time.Duration
	GapBad bool
	Span   time.Duration
	SpanN  int
}

// startsOf returns every start j's history holds, oldest first.
func startsOf(j api.Job) []start {
	var out []start
	ticket := j.Ticket
	// The ticket a start had is the last one an event before it names.
	for _, ev := range j.History {
		if ev.Ticket != 0 {
			ticket = ev.Ticket
			break
		}
	}
	reticketed, rerun := false, false
	for _, ev := range j.History {
		switch ev.Kind {
		case api.Reticketed, api.SlotMissed:
			reticketed = true
		case api.Rerun:
			rerun = true
		case api.Started:
			out = append(out, start{Start: starts.Start{JobID: j.ID, Ticket: ticket, Attempt: ev.Attempt, At: ev.At, Gate: ev.At,
				SlotAt: ev.At.Add(-time.Duration(ev.LatenessMs) * time.Millisecond)},
				Reticketed: reticketed, Retry: ev.Attempt > 1 || rerun})
			reticketed, rerun = false, false
		}
		if ev.Ticket != 0 {
			ticket = ev.Ticket
		}
	}
	if len(out) == 0 && !j.StartedAt.IsZero() {
		// Its history dropped the start: the record still has the last.
		out = append(out, start{Start: starts.Start{JobID: j.ID, Ticket: j.Ticket, Attempt: j.Attempt, At: j.StartedAt, Gate: j.StartedAt, SlotAt: j.SlotAt},
			Reticketed: j.Retickets > 0, Retry: j.Attempt > 1})
	}
	return out
}

// timeline is the picture of a queue's starts over a window: the
// geometry the queue page's SVG is drawn from, and its figures.
type timeline struct {
	From, To       time.Time
	Window         time.Duration
	Interval, Skew time.Duration
	MinSpacing     time.Duration // interval − skew, for the plain interval form
	// Limits are the queue's; Plain says they are one interval, whose
	// rule is the least gap MinSpacing. Otherwise Rule says them in
	// words ("rate 100/1m, burst 10", "at most 10 in any 1s") and the
	// starts are judged by slot.Breaches.
	Limits slot.Limits
	Plain  bool
	// Of is whose limits they are: "queue", or "key" on a key's page;
	// Subject names whose starts they are ("queue emails").
	Of                string
	Subject           string
	Rule              string
	RulerLabel        string
	Starts            []start // in the window, in start order
	Marks             []mark
	Gate              []gateMark
	Ticks             []tick
	Scale             time.Duration // the lateness a full-height mark stands for
	SmallestGap       time.Duration
	BelowMin          int
	P50, P90, P99     time.Duration
	Max               time.Duration
	RulerX, RulerW    float64
	Reticketed, Retry int
}

// mark is one start on the SVG: X at its gate's start, SlotX at its slot, a
// stem from the baseline whose height H grows with its lateness.
type mark struct {
	start
	X, SlotX, H float64
	Top         float64 // the stem's top: baseY − H
	Label       string
	// GapX is where the gap before it begins, for a gap below the minimum.
	GapX float64
}

type gateMark struct {
	X      float64
	Ticket int64
	At     time.Time
}

type tick struct {
	X     float64
	Label string
}

// The SVG's geometry (its viewBox units).
const (
	svgW, svgH   = 960, 260
	plotL, plotR = 56.0, 944.0
	baseY        = 196.0
	minStem      = 22.0
	maxStem      = 150.0
)

// Windows offered on the queue page beside the automatic one.
var windows = []time.Duration{10 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}

// autoWindow is the window the queue page opens with: 40 intervals (for
// another form, 40 of its shortest average gaps: slot.Config.Tick), from
// 10 seconds to an hour.
func autoWindow(interval time.Duration) time.Duration {
	return min(max(40*interval, 10*time.Second), time.Hour)
}

// rule says a queue's limits as the timeline judges them: "one start per
// 1s", "rate 100/1m, burst 10", "at most 10 in any 1s".
func rule(ls slot.Limits) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		switch {
		case !l.Window.IsZero():
			parts[i] = fmt.Sprintf("at most %d in any %s", l.Window.N, api.FormatPeriod(l.Window.Per))
		case !l.Rate.IsZero() && l.Burst > 0:
			parts[i] = fmt.Sprintf("rate %s, burst %d", l.Rate, l.Burst)
		case !l.Rate.IsZero():
			parts[i] = "rate " + l.Rate.String()
		default:
			parts[i] = "one start per " + api.FormatPeriod(l.Interval)
		}
	}
	return strings.Join(parts, "; ")
}

// ruler is the span the ruler under the timeline draws for the first of
// ls, and what it says: a window's period, a rate's average gap, an
// interval less the skew (the least gap the gate allows).
func ruler(ls slot.Limits, skew time.Duration) (time.Duration, string) {
	l := ls[0]
	switch {
	case !l.Window.IsZero():
		return l.Window.Per, fmt.Sprintf("%s: at most %d starts in any span this long", api.FormatPeriod(l.Window.Per), l.Window.N)
	case !l.Rate.IsZero() && l.Burst > 0:
		return l.Rate.Every(), fmt.Sprintf("%s: one start per this on average (rate %s), %d more at once after an idle time", clikit.Human(l.Rate.Every()), l.Rate, l.Burst)
	case !l.Rate.IsZero():
		return l.Rate.Every(), fmt.Sprintf("%s: one start per this on average (rate %s)", clikit.Human(l.Rate.Every()), l.Rate)
	}
	return l.Interval - skew, fmt.Sprintf("interval − skew = %s: the least gap the gate allows", clikit.Human(l.Interval-skew))
}

func (t *timeline) x(at time.Time) float64 {
	f := float64(at.Sub(t.From)) / float64(t.To.Sub(t.From))
	return plotL + f*(plotR-plotL)
}

// newTimeline lays out the starts of jobs and the gate samples over the
// window ending at now.
// maxStartsBack is how far back the admin function lists starts.
const maxStartsBack = time.Hour

func newTimeline(jobs []api.Job, logged []api.Start, gate []gateSample, ls slot.Limits, skew, window time.Duration, now time.Time) timeline {
	t := timeline{To: now, From: now.Add(-window), Window: window, Skew: skew, Limits: ls, Plain: ls.Plain(), Rule: rule(ls), Of: "queue"}
	if t.Plain {
		t.Interval = ls[0].Interval
		t.MinSpacing = t.Interval - skew
	}
	var all []start
	type attempt struct {
		id string
		n  int
	}
	known := map[attempt]bool{}
	for _, j := range jobs {
		for _, s := range startsOf(j) {
			if !s.At.Before(t.From) && !s.At.After(t.To) {
				all = append(all, s)
				known[attempt{s.JobID, s.Attempt}] = true
			}
		}
	}
	for _, l := range logged {
		if !l.StartedAt.Before(t.From) && !l.StartedAt.After(t.To) && !known[attempt{l.JobID, l.Attempt}] {
			gate := l.GateAt
			if gate.IsZero() {
				gate = l.StartedAt // a worker that did not log it
			}
			all = append(all, start{Start: starts.Start{JobID: l.JobID, Ticket: l.Ticket, Attempt: l.Attempt, SlotAt: l.SlotAt, At: l.StartedAt, Gate: gate, Key: l.Key},
				Retry: l.Attempt > 1})
			known[attempt{l.JobID, l.Attempt}] = true
		}
	}
	// In the gate's order, which is the order the handlers began in: a
	// worker more than the skew late for its reserved start gives it up.
	slices.SortStableFunc(all, func(a, b start) int {
		return cmp.Or(a.Gate.Compare(b.Gate), a.At.Compare(b.At), cmp.Compare(a.Ticket, b.Ticket))
	})
	var lates []time.Duration
	for i := range all {
		if i > 0 {
			all[i].Gap = all[i].Gate.Sub(all[i-1].Gate)
			if t.Plain && all[i].Gap < t.MinSpacing {
				all[i].GapBad = true
				t.BelowMin++
			}
			if i == 1 || all[i].Gap < t.SmallestGap {
				t.SmallestGap = all[i].Gap
			}
		}
		if all[i].Reticketed {
			t.Reticketed++
		}
		if all[i].Retry {
			t.Retry++
		}
		lates = append(lates, all[i].Lateness())
	}
	if !t.Plain {
		// The form's rule, over the gates' starts in the order above.
		gates := make([]time.Time, len(all))
		for i, s := range all {
			gates[i] = s.Gate
		}
		for _, b := range slot.Breaches(ls, skew, gates) {
			if s := &all[b.J]; !s.GapBad {
				s.GapBad, s.Span, s.SpanN = true, s.Gate.Sub(all[b.I].Gate), b.J-b.I+1
				t.BelowMin++
			}
		}
	}
	t.Starts = all
	if len(lates) > 0 {
		slices.Sort(lates)
		t.P50, t.P90, t.P99 = percentile(lates, 0.50), percentile(lates, 0.90), percentile(lates, 0.99)
		t.Max = lates[len(lates)-1]
	}
	t.Scale = max(t.Max, skew, 10*time.Millisecond)
	for i, s := range all {
		m := mark{start: s, X: t.x(s.Gate), SlotX: t.x(s.SlotAt)}
		m.SlotX = max(plotL, m.SlotX)
		m.H = minStem + (maxStem-minStem)*float64(max(0, s.Lateness()))/float64(t.Scale)
		m.Top = baseY - m.H
		if s.GapBad && i > 0 {
			m.GapX = t.x(all[i-1].Gate)
			if s.SpanN > 0 {
				m.GapX = t.x(s.Gate.Add(-s.Span))
			}
		}
		t.Marks = append(t.Marks, m)
	}
	t.label()
	for _, g := range gate {
		if !g.At.Before(t.From) && !g.At.After(t.To) {
			t.Gate = append(t.Gate, gateMark{X: t.x(g.At), Ticket: g.Ticket, At: g.At})
		}
	}
	step := tickStep(window)
	for at := t.From.Truncate(step).Add(step); !at.After(t.To); at = at.Add(step) {
		t.Ticks = append(t.Ticks, tick{X: t.x(at), Label: at.UTC().Format("15:04:05")})
	}
	span, label := ruler(ls, skew)
	t.RulerLabel = label
	t.RulerW = float64(span) / float64(window) * (plotR - plotL)
	t.RulerX = plotR - max(t.RulerW, 1)
	return t
}

// labelGap is the least distance between two lateness labels.
const labelGap = 34.0

// label gives marks their lateness labels, the latest first, leaving out
// those that would overlap a label given (the table lists every one).
func (t *timeline) label() {
	order := make([]int, len(t.Marks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(t.Marks[b].Lateness(), t.Marks[a].Lateness()) })
	var taken []float64
	for _, i := range order {
		m := &t.Marks[i]
		if slices.ContainsFunc(taken, func(x float64) bool { return math.Abs(x-m.X) < labelGap }) {
			continue
		}
		m.Label = clikit.Signed(m.Lateness())
		taken = append(taken, m.X)
	}
}

// tickStep is the time between the axis's labels: about six of them.
func tickStep(window time.Duration) time.Duration {
	for _, s := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute} {
		if window/s <= 7 {
			return s
		}
	}
	return 30 * time.Minute
}

// percentile is the nearest-rank p-th percentile of sorted values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
