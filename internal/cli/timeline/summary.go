package timeline

import (
	"cmp"
	"github.com/slotq/slotq/internal/slot"
	"math"
	"slices"
	"time"
)

// Sorted returns a copy of starts in start order (ties by ticket).
func Sorted(starts []Start) []Start {
	s := slices.Clone(starts)
	slices.SortStableFunc(s, func(a, b Start) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return cmp.Compare(a.Ticket, b.Ticket)
	})
	return s
}

// Gaps returns the time between each start and the one before it, for
// starts already in start order: len(starts)−1 gaps.
func Gaps(starts []Start) []time.Duration {
	if len(starts) < 2 {
		return nil
	}
	gaps := make([]time.Duration, len(starts)-1)
	for i := 1; i < len(starts); i++ {
		gaps[i-1] = starts[i].At.Sub(starts[i-1].At)
	}
	return gaps
}

// Violations counts the starts j that break docs/guarantees.md §3 in its window
// form against some earlier start i: start_j − start_i < (j − i)·interval −
// skew. For neighbours that is a gap shorter than interval − skew; for
// longer runs it is a burst above one start per interval. The times must
// be in start order.
//
// With u_k = start_k − k·interval the rule reads u_j ≥ u_i − skew for all
// i < j, so one pass that keeps the largest u so far finds every j.
func Violations(at []time.Time, interval, skew time.Duration) int {
	n := 0
	var top time.Time
	for k, t := range at {
		u := t.Add(-time.Duration(k) * interval)
		if k > 0 && u.Before(top.Add(-skew)) {
			n++
		}
		if k == 0 || u.After(top) {
			top = u
		}
	}
	return n
}

// Inversions counts the starts, in start order, whose ticket is lower than
// that of some earlier start. The gate makes a passed ticket take a new one
// instead of starting, so on one queue this is 0.
func Inversions(starts []Start) int {
	n := 0
	var high int64
	for i, s := range starts {
		if i > 0 && s.Ticket < high {
			n++
		}
		high = max(high, s.Ticket)
	}
	return n
}

// Percentile returns the p-th percentile (0–100) of ds by the nearest-rank
// method: the smallest value with at least p% of the values at or below
// it. It is 0 for no values.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank-1, 0), len(s)-1)]
}

// Summary describes the starts of one queue.
type Summary struct {
	// Starts is the number of starts.
	Starts int
	// Limits and Skew are the queue's, against which Violations counts.
	Limits slot.Limits
	Skew   time.Duration
	// SpacingMin and SpacingP50 are over the gaps between consecutive
	// starts, in start order.
	SpacingMin, SpacingP50 time.Duration
	// Lateness is start − slot.
	LatenessP50, LatenessP99, LatenessMax time.Duration
	// Inversions counts starts of a lower ticket after a higher one.
	Inversions int
	// Violations counts the starts that break one of the queue's limits
	// (slot.Breaches, the skew the one allowance).
	Violations int
	// Makespan is last start − first start; Ideal is the least it can be
	// under the limits: the span of as many slots of an idle queue's
	// backlog ((n−1)·interval for the interval form).
	Makespan, Ideal time.Duration
}

// Ratio is Makespan / Ideal (1 is perfect; 0 with fewer than two starts).
func (s Summary) Ratio() float64 {
	if s.Ideal <= 0 {
		return 0
	}
	return float64(s.Makespan) / float64(s.Ideal)
}

// Summarize describes the starts of one queue whose limits and skew are
// given. The starts may come in any order.
func Summarize(starts []Start, ls slot.Limits, skew time.Duration) Summary {
	s := Sorted(starts)
	sum := Summary{Starts: len(s), Limits: ls, Skew: skew}
	if len(s) == 0 {
		return sum
	}
	gaps := Gaps(s)
	if len(gaps) > 0 {
		sum.SpacingMin = slices.Min(gaps)
		sum.SpacingP50 = Percentile(gaps, 50)
	}
	late := make([]time.Duration, len(s))
	for i, st := range s {
		late[i] = st.Lateness()
	}
	sum.LatenessP50 = Percentile(late, 50)
	sum.LatenessP99 = Percentile(late, 99)
	sum.LatenessMax = slices.Max(late)
	sum.Inversions = Inversions(s)
	at := make([]time.Time, len(s))
	for i, st := range s {
		at[i] = st.At
	}
	sum.Violations = len(slot.Breaches(ls, skew, at))
	sum.Makespan = s[len(s)-1].At.Sub(s[0].At)
	sum.Ideal = Ideal(ls, len(s))
	return sum
}

// Ideal is the least span n starts can take under ls: the span of an idle
// queue's first n slots.
func Ideal(ls slot.Limits, n int) time.Duration {
	if n < 2 {
		return 0
	}
	return slot.Ideal(ls, n)
}

// AtGate returns a copy of starts timed by the gate instead of the
// handler: each At is replaced by Gate, where Gate is known. Summarize over
// it checks the spacing guarantee itself (docs/guarantees.md §3), which is about
// the gate.
func AtGate(starts []Start) []Start {
	s := slices.Clone(starts)
	for i := range s {
		if !s[i].Gate.IsZero() {
			s[i].At = s[i].Gate
		}
	}
	return s
}

// Delays returns, for each start whose Gate is known, how long after the
// gate its handler began.
func Delays(starts []Start) []time.Duration {
	var d []time.Duration
	for _, s := range starts {
		if !s.Gate.IsZero() {
			d = append(d, s.At.Sub(s.Gate))
		}
	}
	return d
}

// Span is one run: when it began and ended.
type Span struct{ Begin, End time.Time }

// MostAtOnce is the most spans that were running at one moment; a span
// that ends as another begins does not count as two at once.
func MostAtOnce(spans []Span) int {
	type edge struct {
		at    time.Time
		delta int
	}
	edges := make([]edge, 0, 2*len(spans))
	for _, s := range spans {
		edges = append(edges, edge{s.Begin, 1}, edge{s.End, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	n, top := 0, 0
	for _, e := range edges {
		n += e.delta
		top = max(top, n)
	}
	return top
}

// Times returns the times (At) of starts, in their order.
func Times(starts []Start) []time.Time {
	t := make([]time.Time, len(starts))
	for i, s := range starts {
		t[i] = s.At
	}
	return t
}
