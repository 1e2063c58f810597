package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// The moves of a configure: each booked job the new limits place
// elsewhere is written at its new slot (moveJob), the line's by their
// tickets (moveAll), the keys' on their keys' clocks (moveKeyed).

// moveAll writes each parked line job of line (by ticket) whose place in
// rec (under cfg's limits) is the skew or more from its slot_at to its
// place (moveJob), and says how many it wrote and by how much at most. A
// smaller move is not written: the record is on time within the skew,
// and a configure that changes nothing of the limits moves nobody, though
// the time moved on since the last one; a job moved already is on its
// place. It writes at most Options.MoveBudget, and none once its context's
// deadline is less than moveReserve away: the moves left are counted in
// Remaining, for the resume function.
func (e *admin) moveAll(ctx context.Context, cfg slot.Config, rec *Rebooked, line []job.Job) (Reslot, error) {
	var rep Reslot
	places := rec.Places(cfg.LimitList())
	for i, j := range line {
		to, ok := places[j.Ticket]
		if !ok {
			continue
		}
		if err := e.moveOne(ctx, &rep, j, to, cfg.Skew); err != nil {
			rep.Remaining += len(line) - i // an upper bound
			return rep, err
		}
	}
	return rep, nil
}

// moveOne writes j's move to to (moveJob), counted in rep: none when the
// shift is less than skew, and none, counted in Remaining, once
// Options.MoveBudget moves are written or ctx's deadline is less than
// moveReserve away.
func (e *admin) moveOne(ctx context.Context, rep *Reslot, j job.Job, to time.Time, skew time.Duration) error {
	shift := to.Sub(j.SlotAt).Abs()
	if shift == 0 || shift < skew {
		return nil
	}
	if deadline, bounded := ctx.Deadline(); rep.Moved >= e.opts.MoveBudget || bounded && time.Until(deadline) < moveReserve {
		rep.Remaining++
		return nil
	}
	moved, err := e.moveJob(ctx, j, to)
	if err != nil {
		return err
	}
	if moved {
		rep.Moved++
		rep.MaxShiftMs = max(rep.MaxShiftMs, shift.Milliseconds())
	}
	return nil
}

// moveJob gives a parked line job its new slot, as a park or a release
// would place it: it stays parked until its new slot comes within the
// transport's reach, or is sent now if it came (as unsent, for the resume
// function to send, if the transport refuses). A job that moved meanwhile
// (released, cancelled) is left alone.
func (e *admin) moveJob(ctx context.Context, j job.Job, to time.Time) (bool, error) {
	now := e.now()
	from := j.Version()
	j.SlotAt = to
	switch {
	case j.ParkReason == job.Unsent:
		// The resume function sends it, for its slot.
	case to.Sub(now) > e.transport.MaxDelay():
		j.DueAt = to.Add(-e.transport.MaxDelay())
	default:
		env := j.Envelope()
		env.SentAt = now
		if err := e.transport.Send(ctx, []Message{{Envelope: env, Delay: e.enqueuer.messageDelay(&j, j.SlotAt, now)}}); err != nil {
			j.ParkReason, j.DueAt = job.Unsent, now
			break
		}
		j.Status, j.ParkReason, j.DueAt = job.Queued, "", time.Time{}
		j.Record(job.Event{At: now, Kind: job.Released, Reason: "configure"})
	}
	err := e.state.UpdateJob(ctx, j, from)
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrJobNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("move %s: %w", j.Ref(), err)
	}
	return true, nil
}

// reslotMeter returns meter m of a queue under cfg with the key's own
// limits set to own (nil: the queue's key limits): its limit state seeded
// for the limits it keeps from then on (slot.Seed), so the key's starts
// before the change and the first after it keep the old limits, and the
// starts after it keep the new ones counting the recent starts before.
func reslotMeter(cfg slot.Config, m slot.Meter, own slot.Limits) slot.Meter {
	if m.KeptUnder == nil {
		m.KeptUnder = append(slot.Limits{}, cfg.LimitsOf(m)...)
	}
	m.Limits = own
	return m.Under(cfg.LimitsOf(m), cfg.Skew)
}

// moveKeyed moves the parked jobs of q's keys (of keys, when given) to
// the slots their keys' limits now give them, as enqueue would book
// them: a configure that changed key_limits changes each key's clock (its meter, seeded for the new limits when read), and
// a job parked for its key's old clock would wait for it, or start
// before its record says. A key's parked jobs are its last, by ticket
// (the ones beyond the transport's reach), so each has the key's other
// jobs not ended ahead of it (its lane's pending count), less those
// parked behind it; the holder that started is on the meter already.
// Within rep's budget (moveAll): the moves past it are counted in
// rep.Remaining.
func (e *admin) moveKeyed(ctx context.Context, q Queue, keys map[string]bool, rep *Reslot) error {
	if !q.Config.Keyed() {
		return nil
	}
	parked, err := e.resumer.listAll(ctx, q, job.Parked)
	if err != nil {
		return fmt.Errorf("list parked jobs: %w", err)
	}
	byKey := map[string][]job.Job{}
	for _, j := range parked {
		if j.Key != "" && j.Scheduled && !j.Detached && (j.ParkReason == job.Far || j.ParkReason == job.Unsent) && (keys == nil || keys[j.Key]) {
			byKey[j.Key] = append(byKey[j.Key], j)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		js := byKey[key]
		m, err := e.lanes.readMeter(ctx, q, key)
		if err != nil {
			return err
		}
		l, err := e.state.GetLane(ctx, q.Name, key)
		if err != nil {
			return fmt.Errorf("key %s: %w", key, err)
		}
		ahead := int64(0)
		if l.Gen == q.Gen {
			ahead = max(0, l.Pending-int64(len(js)))
			if h := l.Holder.Ticket; h > 0 && h == m.State.Current {
				ahead = max(0, ahead-1) // the holder started: its start is on the meter
			}
		}
		now := e.now().Add(e.opts.Lead)
		for i, j := range js {
			to := laterOf(j.Earliest(), slot.KeySlot(m, q.Config.LimitsOf(m), ahead+int64(i), now))
			if err := e.moveOne(ctx, rep, j, to, q.Config.Skew); err != nil {
				return err
			}
		}
	}
	return nil
}
