package metrics

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/pkg/api"
)

// Activity is what a queue did over a recent window, read back from its
// metrics: what `slotq queues stats` shows beside the queue's counters. Counts
// are sums over the window; lateness is start − slot, in milliseconds,
// absent when nothing started. It is api.Activity, the type the admin
// function answers with.
type Activity = api.Activity

// countsOf lists a's counted metrics with their fields.
func countsOf(a *Activity) map[string]*int64 {
	return map[string]*int64{
		Starts: &a.Starts, Succeeded: &a.Succeeded, AttemptFailures: &a.AttemptFailures,
		Retries: &a.Retries, DeadLetters: &a.DeadLetters, Reticketed: &a.Reticketed, HandedBack: &a.HandedBack,
		BatchJobs: &a.BatchJobs,
	}
}

// ActivityReader reads a queue's Activity over the window before now.
type ActivityReader interface {
	Activity(ctx context.Context, queue string, window time.Duration) (Activity, error)
}

// DefaultWindow is the window `slotq queues stats` asks for.
const DefaultWindow = 15 * time.Minute

// CloudWatchAPI is the CloudWatch call CloudWatch makes.
type CloudWatchAPI interface {
	GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

// CloudWatch reads a deployed stack's Activity from the metrics its
// functions wrote (one GetMetricData call; the admin function needs
// cloudwatch:GetMetricData). The window is rounded up to whole minutes,
// the metrics' resolution, and ends at the current minute's end.
type CloudWatch struct {
	API CloudWatchAPI
	// Namespace and Dimension are the stack's (Options); empty means
	// DefaultNamespace, DefaultDimension.
	Namespace, Dimension string
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Activity reads queue's activity over window.
func (c *CloudWatch) Activity(ctx context.Context, queue string, window time.Duration) (Activity, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	if r := window % time.Minute; r != 0 {
		window += time.Minute - r
	}
	window = max(time.Minute, window)
	ns, dim := c.Namespace, c.Dimension
	if ns == "" {
		ns = DefaultNamespace
	}
	if dim == "" {
		dim = DefaultDimension
	}
	end := now().Truncate(time.Minute).Add(time.Minute)
	a := Activity{Window: api.Duration(window)}
	stat := func(id, name, stat string) types.MetricDataQuery {
		return types.MetricDataQuery{
			Id: aws.String(id),
			MetricStat: &types.MetricStat{
				Metric: &types.Metric{
					Namespace: aws.String(ns), MetricName: aws.String(name),
					Dimensions: []types.Dimension{{Name: aws.String(dim), Value: aws.String(queue)}},
				},
				Period: aws.Int32(int32(window / time.Second)),
				Stat:   aws.String(stat),
			},
		}
	}
	counts := countsOf(&a)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range counts {
			if !yield(n) {
				return
			}
		}
	})
	var queries []types.MetricDataQuery
	for i, n := range names {
		queries = append(queries, stat(fmt.Sprintf("c%d", i), n, "Sum"))
	}
	lateness := []struct {
		id, stat string
		f        **float64
	}{{"l50", "p50", &a.LatenessP50}, {"l99", "p99", &a.LatenessP99}, {"lmax", "Maximum", &a.LatenessMax}}
	for _, l := range lateness {
		queries = append(queries, stat(l.id, StartLateness, l.stat))
	}
	in := &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(end.Add(-window)), EndTime: aws.Time(end), MetricDataQueries: queries,
	}
	results := map[string][]float64{}
	for p := cloudwatch.NewGetMetricDataPaginator(c.API, in); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			return a, fmt.Errorf("read metrics of %s: %w", queue, err)
		}
		for _, r := range out.MetricDataResults {
			results[aws.ToString(r.Id)] = append(results[aws.ToString(r.Id)], r.Values...)
		}
	}
	for i, n := range names {
		var sum float64
		for _, v := range results[fmt.Sprintf("c%d", i)] {
			sum += v
		}
		*counts[n] = int64(math.Round(sum))
	}
	for _, l := range lateness {
		if vs := results[l.id]; len(vs) > 0 {
			// One period spans the window; should the answer come in
			// two, the higher figure is the honest one.
			v := slices.Max(vs)
			*l.f = &v
		}
	}
	return a, nil
}

// Tally is an ActivityReader for one process (the local runtime): an
// engine.Observer that keeps what each queue did over the last
// TallyWindow, in one-second buckets, and answers from it as CloudWatch
// answers from the metrics.
type Tally struct {
	// Now is the clock. Default time.Now.
	Now func() time.Time

	mu     sync.Mutex
	queues map[string][]bucket
}

// TallyWindow is the longest window a Tally answers for.
const TallyWindow = time.Hour

// bucket is one second of a queue's events.
type bucket struct {
	at       time.Time
	counts   map[string]int64
	lateness []float64
}

var _ engine.Observer = (*Tally)(nil)
var _ ActivityReader = (*Tally)(nil)

func (t *Tally) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// Observe adds ev to its queue's current bucket.
func (t *Tally) Observe(_ context.Context, ev engine.Event) {
	name, counted := counters[ev.Kind]
	if !counted && ev.Kind != engine.EventStarted {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.queues == nil {
		t.queues = map[string][]bucket{}
	}
	now := t.now().Truncate(time.Second)
	bs := t.queues[ev.Queue]
	for len(bs) > 0 && now.Sub(bs[0].at) > TallyWindow {
		bs = bs[1:]
	}
	if len(bs) == 0 || !bs[len(bs)-1].at.Equal(now) {
		bs = append(bs, bucket{at: now, counts: map[string]int64{}})
	}
	b := &bs[len(bs)-1]
	if counted {
		b.counts[name] += int64(max(1, ev.Count))
	}
	if ev.Kind == engine.EventStarted {
		b.lateness = append(b.lateness, ms(ev.Lateness))
		b.counts[BatchJobs] += int64(ev.Jobs)
	}
	t.queues[ev.Queue] = bs
}

// Activity sums queue's buckets over the window before now (at most
// TallyWindow).
func (t *Tally) Activity(_ context.Context, queue string, window time.Duration) (Activity, error) {
	window = min(window, TallyWindow)
	a := Activity{Window: api.Duration(window)}
	counts := countsOf(&a)
	var lateness []float64
	t.mu.Lock()
	from := t.now().Add(-window)
	for _, b := range t.queues[queue] {
		if b.at.Before(from) {
			continue
		}
		for n, c := range b.counts {
			if f, ok := counts[n]; ok {
				*f += c
			}
		}
		lateness = append(lateness, b.lateness...)
	}
	t.mu.Unlock()
	if len(lateness) > 0 {
		slices.Sort(lateness)
		p50, p99, top := percentile(lateness, 0.50), percentile(lateness, 0.99), lateness[len(lateness)-1]
		a.LatenessP50, a.LatenessP99, a.LatenessMax = &p50, &p99, &top
	}
	return a, nil
}

// percentile is the nearest-rank p-th percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
