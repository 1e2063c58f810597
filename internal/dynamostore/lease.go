package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
)

// The resume lease item: pk Q#<queue>, sk resume. It is a small item of
// its own, so taking the lease never writes the queue's hot state item.
const (
	skResume = "resume"

	attrHolder     = "holder"
	attrLeaseUntil = "lease_until"
	attrReleasedBy = "released_by"
)

// leaseKeep is how long a lease item outlives its last until before the
// TTL may delete it: long enough that a queue's cursor survives between
// passes, short enough that a deleted queue's item goes.
const leaseKeep = 24 * time.Hour

// attrReslot marks, on the resume lease item, a configure whose moves
// may be unfinished (engine.Cursor.Reslot): 1, or absent.
const attrReslot = "reslot"

func leaseKey(queue string) map[string]types.AttributeValue { return key(queuePK(queue), skResume) }

// Lease takes queue's resume lease for holder until until with one
// conditional UpdateItem on the lease item: it succeeds if the item does
// not exist, has no holder, has this holder (a retried write that landed
// passes again), or its lease_until is not after now. ErrLeaseHeld.
func (s *Store) Lease(ctx context.Context, queue, holder string, until, now time.Time) (engine.Cursor, error) {
	h, lu, by := expression.Name(attrHolder), expression.Name(attrLeaseUntil), expression.Value(str(holder))
	cond := missingOr(h, h.Equal(by)).Or(lu.LessThanEqual(expression.Value(timeNum(now))))
	upd := expression.Set(h, by).
		Set(lu, expression.Value(timeNum(until))).
		Set(expression.Name(attrTTL), expression.Value(num(ttlSeconds(until.Add(leaseKeep)))))
	m, ok, err := s.updateIf(ctx, leaseKey(queue), updateWhen(upd, cond))
	if err != nil {
		return engine.Cursor{}, fmt.Errorf("lease %s: %w", queue, err)
	}
	if !ok {
		return engine.Cursor{}, fmt.Errorf("lease %s: %w", queue, engine.ErrLeaseHeld)
	}
	it := &item{m: m}
	c := engine.Cursor{Round: it.time(attrDueSK), Until: it.time(attrRoundUntil), Reslot: it.int(attrReslot) == 1}
	if it.err != nil {
		return engine.Cursor{}, fmt.Errorf("lease %s: %w", queue, it.err)
	}
	return c, nil
}

// ReleaseLease frees holder's lease and stores c, with one conditional
// UpdateItem (holder = this holder). A retried write that had landed is
// recognised by released_by, which names the last pass that released the
// lease until another releases it, even once a new pass holds it.
// ErrLeaseHeld.
func (s *Store) ReleaseLease(ctx context.Context, queue, holder string, c engine.Cursor) error {
	h, by := expression.Name(attrHolder), expression.Value(str(holder))
	upd := expression.Set(expression.Name(attrReleasedBy), by).Remove(h).Remove(expression.Name(attrLeaseUntil))
	// The round is an entry of the due index (due.go), at its time.
	upd = dueUpdate(upd, queuePK(queue), skResume, c.Round)
	upd = setOrRemove(upd, attrRoundUntil, !c.Until.IsZero(), timeNum(c.Until))
	upd = setOrRemove(upd, attrReslot, c.Reslot, num(1))
	old, ok, err := s.updateIf(ctx, leaseKey(queue), updateWhen(upd, h.Equal(by)))
	if err != nil {
		return fmt.Errorf("release lease %s: %w", queue, err)
	}
	if !ok {
		it := &item{m: old}
		if old != nil && it.str(attrReleasedBy) == holder && it.time(attrDueSK).Equal(c.Round) {
			// Our own release, sent again after it landed; another
			// pass may have taken the lease since (Lease keeps
			// released_by and the round).
			return nil
		}
		return fmt.Errorf("release lease %s: %w", queue, engine.ErrLeaseHeld)
	}
	return nil
}
