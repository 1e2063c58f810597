package engine

import (
	"context"
	"slices"
	"time"
)

// resumeWave is how many due entries, in urgency order, a Resume run
// takes in at a time (runPasses): each queue with entries among them gets
// one pass (its lease, its queue read), or they join its pass waiting to
// start.
const resumeWave = 50

// urgency is the latest time the resume function can act on d without
// a slot being missed because of it:
//   - a parked job's slot (its entry is due a transport's reach before
//     it; for a job whose message was refused, or that waits on a lane,
//     its slot is no later);
//   - a schedule's occurrence (its entry is due a lead before it);
//   - a timed pause's end, a release round, a lane whose holder's lease
//     ran out: at once, since starts wait for them.
func (e *resumer) urgency(d DueEntry) time.Time {
	switch d.Kind {
	case DueJob:
		return d.At.Add(e.transport.MaxDelay())
	case DueSchedule:
		return d.At.Add(e.admin.scheduleLead())
	default:
		return d.At
	}
}

// runBudget is a Resume run's time: the due work goes on while it fits
// (keeping, while a rebuild is under way, a share of the run for it);
// the rebuild goes on while the run fits.
type runBudget struct {
	e    *resumer
	ctx  context.Context
	keep time.Duration
}

// newRunBudget measures the run's time from ctx's deadline.
func (e *resumer) newRunBudget(ctx context.Context, rebuilding bool) runBudget {
	b := runBudget{e: e, ctx: ctx}
	if d, ok := ctx.Deadline(); ok && rebuilding {
		left := time.Until(d) - e.opts.RecordTimeout - e.opts.Margin
		b.keep = max(0, left/rebuildShare)
	}
	return b
}

// dueFits reports whether the due work may go on.
func (b runBudget) dueFits() bool { return b.e.fits(b.ctx, b.e.opts.RecordTimeout+b.keep) }

// rebuildStop reports whether the rebuild must stop.
func (b runBudget) rebuildStop() bool { return !b.e.fits(b.ctx, b.e.opts.RecordTimeout) }

// actOnAll acts on due, most urgent first (urgency), a wave at a time,
// the waves' passes at once (runPasses in passes.go): each queue with
// entries in a wave gets a pass under its lease, in the order of its most
// urgent entry, and each schedule its turn. When the run's time is up,
// what is left is counted in the run's backlog.
func (e *resumer) actOnAll(ctx context.Context, due []DueEntry, b runBudget, rep *ResumeReport) []error {
	slices.SortStableFunc(due, func(a, b DueEntry) int { return e.urgency(a).Compare(e.urgency(b)) })
	done, left, errs := e.runPasses(ctx, due, b)
	rep.add(done)
	rep.Queues += done.Queues
	rep.Occurrences += done.Occurrences
	rep.Deferred += done.Deferred
	rep.Backlog += len(left)
	// A queue counts once, a schedule each.
	deferred := map[DueEntry]bool{}
	for _, d := range left {
		k := DueEntry{Queue: d.Queue}
		if d.Kind == DueSchedule {
			k = DueEntry{Kind: d.Kind, Queue: d.Queue, ID: d.ID}
		}
		deferred[k] = true
	}
	rep.Deferred += len(deferred)
	if rep.Backlog > 0 {
		e.log.InfoContext(ctx, "resume run's time is up: due entries left for the next run, the least urgent", "backlog", rep.Backlog)
	}
	return errs
}
