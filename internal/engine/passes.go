package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// A Resume run's passes at once. The run reads its due entries, sorts
// them most urgent first and takes them a wave (resumeWave) at a time:
// each queue with entries in a wave gets a pass under its lease, each
// schedule its turn. Passes of different queues run together, up to
// Options.ResumeConcurrency, and the waves overlap: a pass starts as soon
// as a place is free and its queue's pass of an earlier wave is done, in
// the order of the waves; a queue's entries of a later wave join its pass
// still waiting to start (up to maxPass), so a queue with a long backlog
// is released in large passes, one after another, while other queues'
// passes run beside them. Within a pass, the reads of due jobs and the
// releases (ReleaseBatch jobs each: a send, then their records) run
// together too, all the run's passes sharing ResumeConcurrency places for
// those calls (runCalls).
//
// Nothing is lost to a run cut short: a pass that has not started when
// the run's time is up leaves its entries due (the run's backlog), and a
// release stopped midway leaves each of its jobs either sent and written
// queued, or still parked (sent or not) for the next run; a job sent by
// both finds its duplicate dropped by the worker's claim (see Work).

// maxPass bounds the due entries one pass of a queue acts on, when later
// waves' entries join a pass still waiting to start.
const maxPass = 500

// pass is one queue's pass (or one schedule's turn) of a run.
type pass struct {
	// line is what passes one at a time: the queue's name, or the
	// schedule's (schedule set).
	line     string
	schedule bool
	entries  []DueEntry
}

// passRun is one Resume run's passes: what they did, summed.
type passRun struct {
	e      *resumer
	b      runBudget
	holder string

	mu    sync.Mutex
	rep   ResumeReport
	errs  []error
	left  []DueEntry
	acted map[string]bool
}

// runPasses acts on due (most urgent first) as the comment above says,
// and returns what its passes did and the entries it left.
func (e *resumer) runPasses(ctx context.Context, due []DueEntry, b runBudget) (ResumeReport, []DueEntry, []error) {
	r := &passRun{e: e, b: b, holder: newHolder(), acted: map[string]bool{}}
	ctx = withRunCalls(ctx, e.opts.ResumeConcurrency)
	limit := e.opts.ResumeConcurrency
	var pending []*pass
	busy := map[string]bool{}
	done := make(chan *pass)
	running, next, stopped := 0, 0, false
	for {
		// Waves in, while fewer than limit passes wait to start.
		for !stopped && next < len(due) && len(pending) < limit {
			if !b.dueFits() {
				stopped = true
				break
			}
			wave := due[next:min(next+resumeWave, len(due))]
			next += len(wave)
			pending = joinWave(pending, wave)
		}
		// Passes out, in wave order, where their line is free.
		for i := 0; i < len(pending) && running < limit && !stopped; {
			p := pending[i]
			if busy[p.line] {
				i++
				continue
			}
			if !b.dueFits() {
				stopped = true
				break
			}
			pending = slices.Delete(pending, i, i+1)
			busy[p.line] = true
			running++
			go func() {
				r.act(ctx, p)
				done <- p
			}()
		}
		if running == 0 {
			break
		}
		p := <-done
		running--
		busy[p.line] = false
	}
	for _, p := range pending {
		r.left = append(r.left, p.entries...)
	}
	r.left = append(r.left, due[next:]...)
	r.rep.Queues = len(r.acted)
	return r.rep, r.left, r.errs
}

// joinWave adds wave's passes to pending: a schedule's turn first (an
// occurrence is due a short lead before its time, a parked job a
// transport's reach before its slot, so a schedule in a wave is among its
// most urgent), then a pass per queue in the order of its most urgent
// entry. A queue's entries join its last pass still pending (none of
// pending runs yet), if it has room.
func joinWave(pending []*pass, wave []DueEntry) []*pass {
	open := map[string]*pass{}
	for _, p := range pending {
		if !p.schedule && len(p.entries) < maxPass {
			open[p.line] = p
		}
	}
	var queues []*pass
	for _, d := range wave {
		if d.Kind == DueSchedule {
			pending = append(pending, &pass{line: "schedule " + d.Queue + " " + d.ID, schedule: true, entries: []DueEntry{d}})
			continue
		}
		p := open[d.Queue]
		if p == nil || len(p.entries) >= maxPass {
			p = &pass{line: d.Queue}
			open[d.Queue] = p
			queues = append(queues, p)
		}
		p.entries = append(p.entries, d)
	}
	return append(pending, queues...)
}

// act runs one pass and adds what it did to the run's.
func (r *passRun) act(ctx context.Context, p *pass) {
	e := r.e
	if p.schedule {
		var rep ResumeReport
		errs := e.runSchedules(ctx, p.entries, &rep)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.rep.add(rep)
		r.rep.Occurrences += rep.Occurrences
		r.rep.Deferred += rep.Deferred
		r.errs = append(r.errs, errs...)
		return
	}
	rctx, end := e.traceRound(ctx, p.line)
	rep, err := e.resumeQueue(rctx, p.line, p.entries, r.holder)
	end(rep, err)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acted[p.line] = true
	r.rep.add(rep)
	if err != nil {
		r.errs = append(r.errs, err)
	}
}

// runCallsKey keys a run's places for calls in its context.
type runCallsKey struct{}

// withRunCalls gives ctx n places for the calls a run's passes make at
// once (inParallel).
func withRunCalls(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, runCallsKey{}, make(chan struct{}, n))
}

// inParallel runs f(0) … f(n-1), at most limit at once, and also no more
// than ctx's run has places for (withRunCalls), and returns their errors
// joined. A run's places are taken one a call of f: f makes one call, or
// a few in sequence.
func inParallel(ctx context.Context, n, limit int, f func(i int) error) error {
	if n == 0 {
		return nil
	}
	places, _ := ctx.Value(runCallsKey{}).(chan struct{})
	errs := make([]error, n)
	own := make(chan struct{}, max(1, limit))
	var wg sync.WaitGroup
	for i := range n {
		own <- struct{}{}
		if places != nil {
			select {
			case places <- struct{}{}:
			case <-ctx.Done():
				<-own
				errs[i] = ctx.Err()
				continue
			}
		}
		wg.Go(func() {
			defer func() {
				if places != nil {
					<-places
				}
				<-own
			}()
			errs[i] = f(i)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
