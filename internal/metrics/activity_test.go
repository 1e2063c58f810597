package metrics_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/metrics"
)

// fakeCloudWatch answers GetMetricData from a table of metric name and
// statistic → values, and keeps the input.
type fakeCloudWatch struct {
	in     *cloudwatch.GetMetricDataInput
	values map[[2]string][]float64
}

func (f *fakeCloudWatch) GetMetricData(_ context.Context, in *cloudwatch.GetMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	f.in = in
	out := &cloudwatch.GetMetricDataOutput{}
	for _, q := range in.MetricDataQueries {
		ms := q.MetricStat
		out.MetricDataResults = append(out.MetricDataResults, types.MetricDataResult{
			Id: q.Id, Values: f.values[[2]string{aws.ToString(ms.Metric.MetricName), aws.ToString(ms.Stat)}],
		})
	}
	return out, nil
}

// CloudWatch asks for the queue's metrics in the stack's namespace and
// dimension, over whole minutes ending with the current one, and reads
// sums and lateness percentiles back.
func TestCloudWatchActivity(t *testing.T) {
	fake := &fakeCloudWatch{values: map[[2]string][]float64{
		{metrics.Starts, "Sum"}:            {40, 2},
		{metrics.DeadLetters, "Sum"}:       {1},
		{metrics.StartLateness, "p50"}:     {3.5},
		{metrics.StartLateness, "p99"}:     {12, 30},
		{metrics.StartLateness, "Maximum"}: {44},
	}}
	now := time.Date(2026, 11, 22, 10, 7, 30, 0, time.UTC)
	cw := &metrics.CloudWatch{API: fake, Namespace: "slotq/prod", Dimension: "Queue", Now: func() time.Time { return now }}
	a, err := cw.Activity(context.Background(), "emails", 14*time.Minute+10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if a.Starts != 42 || a.DeadLetters != 1 || a.Succeeded != 0 || time.Duration(a.Window) != 15*time.Minute {
		t.Fatalf("activity %+v", a)
	}
	if a.LatenessP50 == nil || *a.LatenessP50 != 3.5 || *a.LatenessP99 != 30 || *a.LatenessMax != 44 {
		t.Fatalf("lateness p50 %v p99 %v max %v", a.LatenessP50, a.LatenessP99, a.LatenessMax)
	}
	in := fake.in
	if !in.EndTime.Equal(time.Date(2026, 11, 22, 10, 8, 0, 0, time.UTC)) || in.EndTime.Sub(*in.StartTime) != 15*time.Minute {
		t.Fatalf("window %v – %v", in.StartTime, in.EndTime)
	}
	for _, q := range in.MetricDataQueries {
		m := q.MetricStat.Metric
		if aws.ToString(m.Namespace) != "slotq/prod" || len(m.Dimensions) != 1 ||
			aws.ToString(m.Dimensions[0].Name) != "Queue" || aws.ToString(m.Dimensions[0].Value) != "emails" ||
			aws.ToInt32(q.MetricStat.Period) != 900 {
			t.Fatalf("query %s: %+v, period %d", aws.ToString(q.Id), m, aws.ToInt32(q.MetricStat.Period))
		}
	}
	// Nothing started: no lateness, not zero lateness.
	fake.values = nil
	if a, err = cw.Activity(context.Background(), "emails", time.Minute); err != nil || a.LatenessP50 != nil || a.Starts != 0 {
		t.Fatalf("empty activity %+v, %v", a, err)
	}
}

// A Tally answers from the events it observed within the window.
func TestTallyActivity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		tally := &metrics.Tally{}
		for i := range 10 {
			tally.Observe(ctx, engine.Event{Kind: engine.EventStarted, Queue: "q", Lateness: time.Duration(i+1) * time.Millisecond})
		}
		tally.Observe(ctx, engine.Event{Kind: engine.EventFailed, Queue: "q"})
		tally.Observe(ctx, engine.Event{Kind: engine.EventReticketed, Queue: "q", Count: 3})
		tally.Observe(ctx, engine.Event{Kind: engine.EventStarted, Queue: "other"})
		time.Sleep(20 * time.Minute)
		tally.Observe(ctx, engine.Event{Kind: engine.EventStarted, Queue: "q", Lateness: 100 * time.Millisecond})

		a, _ := tally.Activity(ctx, "q", time.Hour)
		if a.Starts != 11 || a.DeadLetters != 1 || a.Reticketed != 3 || *a.LatenessP50 != 6 || *a.LatenessMax != 100 {
			t.Fatalf("hour: %+v p50 %v max %v", a, *a.LatenessP50, *a.LatenessMax)
		}
		a, _ = tally.Activity(ctx, "q", metrics.DefaultWindow)
		if a.Starts != 1 || a.DeadLetters != 0 || *a.LatenessP99 != 100 {
			t.Fatalf("last 15 minutes: %+v", a)
		}
	})
}

// A batch's start counts once among Starts, and its jobs among BatchJobs,
// in the tally and in what the recorder writes; other queues write no
// BatchJobs.
func TestBatchJobsCounted(t *testing.T) {
	ctx := context.Background()
	tally := &metrics.Tally{}
	tally.Observe(ctx, engine.Event{Kind: engine.EventStarted, Queue: "b", Jobs: 10})
	tally.Observe(ctx, engine.Event{Kind: engine.EventStarted, Queue: "b", Jobs: 4})
	tally.Observe(ctx, engine.Event{Kind: engine.EventStarted, Queue: "one"})
	if a, _ := tally.Activity(ctx, "b", time.Minute); a.Starts != 2 || a.BatchJobs != 14 {
		t.Fatalf("batched queue: %d starts carrying %d jobs, want 2 and 14", a.Starts, a.BatchJobs)
	}
	if a, _ := tally.Activity(ctx, "one", time.Minute); a.Starts != 1 || a.BatchJobs != 0 {
		t.Fatalf("queue without batches: %d starts, %d batch jobs; want 1 and 0", a.Starts, a.BatchJobs)
	}
}
