package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// hookState calls afterGate once a gate of ticket passed (the start is
// reserved, the job not yet claimed), and can make the worker die right
// after its claim of ticket landed (the start reserved and claimed, the
// target not begun).
type hookState struct {
	onPass
	ticket    int64
	afterGate func()
	dieClaim  bool

	once sync.Once
	mu   sync.Mutex
	at   time.Time // when afterGate ran
}

// passed runs afterGate once, after ticket passed the gate.
func (h *hookState) passed(ticket int64) {
	h.mu.Lock()
	hook := h.afterGate
	h.mu.Unlock()
	if ticket == h.ticket && hook != nil {
		h.once.Do(func() {
			h.mu.Lock()
			h.at = time.Now()
			h.mu.Unlock()
			hook()
		})
	}
}

func (h *hookState) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	err := h.State.UpdateJob(ctx, j, from)
	if err == nil && h.dieClaim && j.Ticket == h.ticket && from.Status == job.Queued && j.Status == job.Running {
		died := false
		h.once.Do(func() { died = true })
		if died {
			return errors.New("simulated crash after the claim, before the start")
		}
	}
	return err
}

// What an admin call does to a start that the gate reserved before the
// call returned, on a queue at 1s intervals with a lead of 200ms: the
// call lands right after ticket 3's gate, before its claim.
//
//   - pause and purge act at the gate: ticket 3, which passed it, starts at
//     its slot, at most a lead after the call returned; nothing starts
//     after it (the later tickets are parked, or cancelled);
//   - cancel finds ticket 3 waiting and wins: its claim fails, it never
//     starts, and its slot is spent: ticket 4 starts at its own slot.
func TestAdminBetweenReservationAndStart(t *testing.T) {
	const lead = 200 * time.Millisecond
	tests := []struct {
		name string
		op   func(ctx context.Context, s *sim, j3 job.Ref) error
		// starts3 says ticket 3 starts; later says jobs after it start.
		starts3, later bool
		// rest is the status of the jobs after ticket 3 at the end.
		rest job.Status
	}{
		{name: "pause", starts3: true, rest: job.Parked, op: func(ctx context.Context, s *sim, _ job.Ref) error {
			_, err := s.eng.Pause(ctx, "r", time.Time{})
			return err
		}},
		{name: "purge", starts3: true, rest: job.Cancelled, op: func(ctx context.Context, s *sim, _ job.Ref) error {
			_, err := s.eng.Purge(ctx, "r")
			return err
		}},
		{name: "cancel", later: true, rest: job.Succeeded, op: func(ctx context.Context, s *sim, j3 job.Ref) error {
			_, err := s.eng.CancelJob(ctx, j3)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				h := &hookState{ticket: 3}
				s := newSim(t, simOptions{Lead: lead, Wrap: func(in engine.State) engine.State {
					h.onPass = onPass{in, h.passed}
					return h
				}})
				defer s.stop()
				s.createQueue("r", slot.Config{Interval: time.Second})
				res := s.enqueue("r", 6, nil)
				var returned time.Time // under h.mu
				h.mu.Lock()
				h.afterGate = func() {
					if err := tt.op(ctx, s, job.Ref{Queue: "r", ID: res.Jobs[2].JobID}); err != nil {
						t.Errorf("%s: %v", tt.name, err)
					}
					h.mu.Lock()
					returned = time.Now()
					h.mu.Unlock()
				}
				h.mu.Unlock()
				time.Sleep(10 * time.Second)
				synctest.Wait()
				h.mu.Lock()
				defer h.mu.Unlock()

				if h.at.IsZero() {
					t.Fatal("ticket 3 never passed the gate")
				}
				starts := s.startsOf("r")
				byID := map[string]start{}
				for _, x := range starts {
					byID[x.ID] = x
				}
				for i, a := range res.Jobs[:2] {
					if x, ok := byID[a.JobID]; !ok || !x.At.Equal(a.SlotAt) {
						t.Errorf("ticket %d: start %+v, want at its slot %v", i+1, x, a.SlotAt)
					}
				}
				j3, ok := byID[res.Jobs[2].JobID]
				if ok != tt.starts3 {
					t.Fatalf("ticket 3 started: %v, want %v (starts %+v)", ok, tt.starts3, starts)
				}
				if ok && (!j3.At.Equal(res.Jobs[2].SlotAt) || j3.At.Sub(returned) > lead) {
					t.Errorf("ticket 3 started at %v; want its slot %v, at most the lead %v after %s returned at %v",
						j3.At, res.Jobs[2].SlotAt, lead, tt.name, returned)
				}
				if !ok {
					if j, err := s.eng.Job(ctx, job.Ref{Queue: "r", ID: res.Jobs[2].JobID}); err != nil || j.Status != job.Cancelled {
						t.Errorf("ticket 3: %s, %v; want cancelled", j.Status, err)
					}
				}
				for i, a := range res.Jobs[3:] {
					x, started := byID[a.JobID]
					if started != tt.later {
						t.Errorf("ticket %d started: %v, want %v", i+4, started, tt.later)
					}
					if started && !x.At.Equal(a.SlotAt) {
						t.Errorf("ticket %d started at %v, want its slot %v (the cancelled job's slot is spent, nobody moves)", i+4, x.At, a.SlotAt)
					}
					if j, err := s.eng.Job(ctx, job.Ref{Queue: "r", ID: a.JobID}); err != nil || j.Status != tt.rest {
						t.Errorf("ticket %d: %s, %v; want %s", i+4, j.Status, err, tt.rest)
					}
				}
			})
		})
	}
}

// A worker that dies after its claim and before its start (the start was
// reserved and the job marked running): the job is not lost, its message
// comes back after the visibility timeout, and the attempt, found lost
// once its lease ends, is retried and runs; the jobs after it start at
// their slots meanwhile. Nothing starts twice.
func TestCrashAfterReservationBeforeStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &hookState{ticket: 3, dieClaim: true}
		s := newSim(t, simOptions{Lease: time.Minute, Wrap: func(in engine.State) engine.State {
			h.onPass = onPass{in, h.passed}
			return h
		}})
		defer s.stop()
		s.createQueue("c", slot.Config{Interval: time.Second})
		res := s.enqueue("c", 6, nil)
		s.waitFinished("c", time.Hour)
		starts := s.startsOf("c")
		checkSingleStart(t, starts)
		byID := map[string][]start{}
		for _, x := range starts {
			byID[x.ID] = append(byID[x.ID], x)
		}
		for i, a := range res.Jobs {
			xs := byID[a.JobID]
			if len(xs) != 1 {
				t.Fatalf("ticket %d ran %d times, want once", i+1, len(xs))
			}
			if i == 2 {
				if xs[0].Attempt != 2 || !xs[0].At.After(a.SlotAt.Add(time.Minute)) {
					t.Errorf("ticket 3 ran %+v; want its second attempt, after its lease", xs[0])
				}
				continue
			}
			if !xs[0].At.Equal(a.SlotAt) {
				t.Errorf("ticket %d started at %v, want its slot %v", i+1, xs[0].At, a.SlotAt)
			}
		}
		for _, a := range res.Jobs {
			if j, err := s.eng.Job(context.Background(), job.Ref{Queue: "c", ID: a.JobID}); err != nil || j.Status != job.Succeeded {
				t.Errorf("job %s: %s, %v; want succeeded", a.JobID, j.Status, err)
			}
		}
	})
}
