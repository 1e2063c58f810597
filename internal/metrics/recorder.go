package metrics

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/slotq/slotq/internal/engine"
)

// Message is the slog message of every EMF line.
const Message = "metrics"

// Options configure a Recorder.
type Options struct {
	// Namespace is the CloudWatch namespace. Default DefaultNamespace.
	Namespace string
	// Dimension, if set, is the name of a queue dimension each queue's
	// metrics are also published under (DefaultDimension, "Queue", is
	// the template's): CloudWatch bills each metric of each queue as a
	// custom metric of its own, so the cost grows with the number of
	// queues (docs/costs.md). Default empty: the metrics are
	// stack-wide only, and each line names its queue in the property
	// QueueProperty, which Logs Insights can filter and group by.
	Dimension string
	// Logger receives the lines, at level Info whatever its level. With a
	// JSON handler (the functions' on Lambda, LogFormat JSON) each line is
	// an EMF document.
	// Default: discard.
	Logger *slog.Logger
	// Now is the clock of the lines' timestamps. Default time.Now.
	Now func() time.Time
}

// Recorder adds up what happened to each queue until Flush writes it. It is
// an engine.Observer, and safe for concurrent use.
type Recorder struct {
	o       Options
	mu      sync.Mutex
	queues  map[string]map[string][]float64
	refused map[string]float64
	// stack holds the run's own figures (Resumed), published without a
	// queue.
	stack map[string][]float64
}

var _ engine.Observer = (*Recorder)(nil)

// New returns a Recorder.
func New(o Options) *Recorder {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Recorder{o: o, queues: map[string]map[string][]float64{}, refused: map[string]float64{}}
}

// counters maps the engine's counted events to metrics.
var counters = map[engine.EventKind]string{
	engine.EventStarted:       Starts,
	engine.EventReticketed:    Reticketed,
	engine.EventParked:        Parks,
	engine.EventReleased:      Released,
	engine.EventHandedBack:    HandedBack,
	engine.EventSlotMissed:    MissedSlots,
	engine.EventAttemptFailed: AttemptFailures,
	engine.EventRetried:       Retries,
	engine.EventFailed:        DeadLetters,
	engine.EventSucceeded:     Succeeded,
	engine.EventLifted:        PausesLifted,
	engine.EventSlowedDown:    SlowDowns,
}

// Observe adds one engine event.
func (r *Recorder) Observe(_ context.Context, ev engine.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.queue(ev.Queue)
	if name, ok := counters[ev.Kind]; ok {
		add(q, name, float64(max(1, ev.Count)))
	}
	switch ev.Kind {
	case engine.EventStarted:
		if ev.Jobs > 0 {
			add(q, BatchJobs, float64(ev.Jobs))
		}
		q[StartLateness] = append(q[StartLateness], ms(ev.Lateness))
		if ev.HasGap {
			q[StartGap] = append(q[StartGap], ms(ev.Gap))
		}
	case engine.EventFigures:
		f := ev.Figures
		q[Waiting] = []float64{float64(f.Waiting)}
		if f.Parked >= 0 {
			q[ParkedJobs] = []float64{float64(f.Parked)}
			q[Queued] = []float64{float64(max(0, f.Waiting-int64(f.Parked)))}
		}
		q[Lag] = []float64{ms(f.Lag)}
		l := f.Lanes
		if l.Running >= 0 {
			q[Running] = []float64{float64(l.Running)}
		}
		if l.KeysHeld+l.KeysWaiting+l.WaitingForPlace > 0 || l.Running >= 0 {
			q[KeysHeld] = []float64{float64(l.KeysHeld)}
			q[KeysWaiting] = []float64{float64(l.KeysWaiting)}
			q[WaitingOnKeys] = []float64{float64(l.WaitingOnKeys)}
			q[WaitingForPlace] = []float64{float64(l.WaitingForPlace)}
		}
	}
}

// Accepted adds n new jobs accepted by queue.
func (r *Recorder) Accepted(queue string, n int) {
	if n <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	add(r.queue(queue), JobsAccepted, float64(n))
}

// Resumed records a resume run's own figures, for the stack rather than
// a queue: its backlog (ResumeBacklog), when it left one, and, while a
// rebuild of the records is under way, the queues it has left
// (ReindexQueuesLeft; 0 once over). A run that left nothing and rebuilt
// nothing publishes nothing, so an idle stack pays for no metric; an
// alarm on the backlog treats the missing data as none.
func (r *Recorder) Resumed(rep engine.ResumeReport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stack = map[string][]float64{}
	if rep.Backlog > 0 {
		r.stack[ResumeBacklog] = []float64{float64(rep.Backlog)}
	}
	if p := rep.Reindex; p != nil {
		r.stack[ReindexQueuesLeft] = []float64{float64(p.QueuesLeft)}
	}
}

// Refused adds a request refused with code (lambdafn.Error's code).
func (r *Recorder) Refused(code string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refused[code]++
}

func (r *Recorder) queue(name string) map[string][]float64 {
	q := r.queues[name]
	if q == nil {
		q = map[string][]float64{}
		r.queues[name] = q
	}
	return q
}

// add adds v to a counter (a metric of one value).
func add(q map[string][]float64, name string, v float64) {
	if len(q[name]) == 0 {
		q[name] = []float64{0}
	}
	q[name][0] += v
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Flush writes what was added since the last Flush, one line per queue
// (more when a metric has more than MaxValues values) and one per refusal
// code, and starts over. Nothing is written when nothing was added.
//
// The lines are Info records written whatever the logger's level: a
// function that logs only warnings still publishes its metrics.
func (r *Recorder) Flush(ctx context.Context) {
	h := r.o.Logger.Handler()
	for _, l := range r.Lines() {
		for _, part := range split(l) {
			rec := slog.NewRecord(time.Now(), slog.LevelInfo, Message, 0)
			rec.AddAttrs(part.Attrs()...)
			_ = h.Handle(ctx, rec) // as Logger.LogAttrs, which drops the handler's error
		}
	}
}

// Lines takes what was added since the last call as EMF lines, and starts
// over. Flush writes them.
func (r *Recorder) Lines() []Line {
	r.mu.Lock()
	queues, refused := r.queues, r.refused
	stack := r.stack
	r.queues, r.refused, r.stack = map[string]map[string][]float64{}, map[string]float64{}, nil
	r.mu.Unlock()
	now := r.o.Now()
	var lines []Line
	for _, name := range slices.Sorted(maps.Keys(queues)) {
		vals := queues[name]
		l := Line{
			Namespace: r.o.Namespace, Time: now,
			DimensionSets: [][]string{{}},
			Properties:    map[string]string{QueueProperty: name},
			Names:         order(vals),
			Values:        vals,
		}
		if r.o.Dimension != "" {
			l.DimensionSets = [][]string{{r.o.Dimension}, {}}
			l.Dimensions = map[string]string{r.o.Dimension: name}
		}
		lines = append(lines, l)
	}
	if len(stack) > 0 {
		lines = append(lines, Line{
			Namespace: r.o.Namespace, Time: now,
			DimensionSets: [][]string{{}},
			Names:         order(stack),
			Values:        stack,
		})
	}
	for _, code := range slices.Sorted(maps.Keys(refused)) {
		lines = append(lines, Line{
			Namespace: r.o.Namespace, Time: now,
			DimensionSets: [][]string{{CodeDimension}, {}},
			Dimensions:    map[string]string{CodeDimension: code},
			Names:         []string{JobsRefused},
			Values:        map[string][]float64{JobsRefused: {refused[code]}},
		})
	}
	return lines
}

// order lists vals' metrics in Metrics' order.
func order(vals map[string][]float64) []string {
	var names []string
	for _, m := range Metrics {
		if _, ok := vals[m.Name]; ok {
			names = append(names, m.Name)
		}
	}
	return names
}
