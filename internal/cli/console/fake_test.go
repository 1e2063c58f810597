package console

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// fakeSource is a Source in memory that records the actions it is asked
// for.
type fakeSource struct {
	mu     sync.Mutex
	queues map[string]*QueueStats
	jobs   map[string]api.Job // by queue/id
	starts map[string][]api.Start
	keys   map[string][]api.KeyInfo // by queue, busiest first
	calls  []string
}

var _ Source = (*fakeSource)(nil)

func newFake() *fakeSource {
	return &fakeSource{queues: map[string]*QueueStats{}, jobs: map[string]api.Job{}, starts: map[string][]api.Start{}, keys: map[string][]api.KeyInfo{}}
}

func (f *fakeSource) addQueue(name string, cfg api.Config) *QueueStats {
	st := &QueueStats{Stats: api.Stats{Queue: name, Config: cfg, Lanes: api.LaneFigures{Running: -1}}}
	f.queues[name] = st
	return st
}

func (f *fakeSource) addJob(j api.Job) { f.jobs[j.Queue+"/"+j.ID] = j }

func (f *fakeSource) record(format string, a ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, a...))
}

func (f *fakeSource) Queues(context.Context) ([]api.Queue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("list")
	var qs []api.Queue
	for _, name := range []string{"emails", "crawls", "reports"} {
		if s, ok := f.queues[name]; ok {
			qs = append(qs, api.Queue{Name: name, Config: s.Config, State: s.State})
		}
	}
	return qs, nil
}

func (f *fakeSource) Stats(_ context.Context, q string, activity bool) (QueueStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if activity {
		f.record("stats %s", q)
	} else {
		f.record("stats %s (counters)", q)
	}
	s, ok := f.queues[q]
	if !ok {
		return QueueStats{}, fmt.Errorf("stats %s: %w", q, ErrNotFound)
	}
	return *s, nil
}

func (f *fakeSource) Starts(_ context.Context, q string, since time.Time) ([]api.Start, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("starts %s", q)
	if _, ok := f.queues[q]; !ok {
		return nil, fmt.Errorf("starts %s: %w", q, ErrNotFound)
	}
	var out []api.Start
	for _, st := range f.starts[q] {
		if !st.StartedAt.Before(since) {
			out = append(out, st)
		}
	}
	return out, nil
}

func (f *fakeSource) Jobs(_ context.Context, q string, status api.Status, after int64, limit int) ([]api.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("list %s %s", q, status)
	var out []api.Job
	for _, j := range f.jobs {
		if j.Queue == q && j.Status == status && j.Ticket > after && len(out) < limit {
			out = append(out, j)
		}
	}
	return out, nil
}

func (f *fakeSource) Job(_ context.Context, q, id string) (api.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("get %s %s", q, id)
	j, ok := f.jobs[q+"/"+id]
	if !ok {
		return api.Job{}, fmt.Errorf("get %s/%s: %w", q, id, ErrNotFound)
	}
	return j, nil
}

func (f *fakeSource) Pause(_ context.Context, q string, until time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if until.IsZero() {
		f.record("pause %s", q)
	} else {
		f.record("pause %s until %s", q, until.Format(time.RFC3339))
	}
	f.queues[q].State.Paused, f.queues[q].State.PausedUntil = true, until
	return nil
}

func (f *fakeSource) Resume(_ context.Context, q string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("resume %s", q)
	f.queues[q].State.Paused = false
	return nil
}

func (f *fakeSource) Cancel(_ context.Context, q, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("cancel %s %s", q, id)
	return nil
}

func (f *fakeSource) Retry(_ context.Context, q, id, by string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("retry %s %s by %s", q, id, by)
	return nil
}

func (f *fakeSource) Purge(_ context.Context, q string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("purge %s", q)
	return 3, nil
}

func (f *fakeSource) Keys(_ context.Context, q string) ([]api.KeyInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("list_keys %s", q)
	if _, ok := f.queues[q]; !ok {
		return nil, fmt.Errorf("list_keys %s: %w", q, ErrNotFound)
	}
	return f.keys[q], nil
}

func (f *fakeSource) Key(_ context.Context, q, key string) (api.KeyInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("get_key %s %s", q, key)
	s, ok := f.queues[q]
	if !ok {
		return api.KeyInfo{}, fmt.Errorf("get_key %s: %w", q, ErrNotFound)
	}
	for _, k := range f.keys[q] {
		if k.Key == key {
			return k, nil
		}
	}
	// A key without jobs follows the queue's key_limits, as the admin's
	// get_key answers it.
	return api.KeyInfo{Key: key, Limits: s.Config.KeyLimits}, nil
}

func (f *fakeSource) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}
