package costs

import (
	"context"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/schedule"
	"github.com/slotq/slotq/internal/slot"
)

// occurrences makes n jobs the way a schedule does: it creates a
// schedule every 1s of n occurrences (by the admin role, unbilled: a
// schedule is created once and makes jobs for ever), starting far enough
// ahead that the create makes none; moves the clock to the last
// occurrence less the lead, plus a second; and runs the resume function once, as the
// stack's schedule would, which makes them all. The bill is what that run
// did: the schedule's read and its advance, the queue's read, the
// occurrences' enqueue (a read per id, the ticket, the records, the
// send).
func occurrences(ctx context.Context, e *env, n int) ([]engine.Accepted, error) {
	every := slot.Duration(time.Second)
	start := e.clock.Now().Add(engine.DefaultScheduleLead + time.Minute).Truncate(time.Second)
	end := start.Add(time.Duration(n-1) * time.Second)
	adm := engine.New(engine.Options{State: e.raw, Transport: e.admin.tr, Now: e.clock.Now, Lead: costLead})
	sc, err := adm.CreateSchedule(ctx, "q", "tick", schedule.Spec{Every: &every, Start: &start, End: &end, Job: schedule.Job{Kind: "ok"}})
	if err != nil {
		return nil, err
	}
	if sc.Made != 0 {
		return nil, fmt.Errorf("the create made %d occurrences, want none", sc.Made)
	}
	// A lead before the last occurrence: the run makes all n.
	e.clock.jumpTo(end.Add(-engine.DefaultScheduleLead + time.Second))
	var rep engine.ResumeReport
	if err := e.resume.call(func() (err error) { rep, err = e.resume.eng.Resume(ctx); return err }); err != nil {
		return nil, err
	}
	if rep.Occurrences != n {
		return nil, fmt.Errorf("the resume run made %d occurrences, want %d", rep.Occurrences, n)
	}
	acc := make([]engine.Accepted, n)
	for i := range acc {
		acc[i].JobID = schedule.OccurrenceID("tick", start.Add(time.Duration(i)*time.Second))
	}
	return acc, nil
}
