package dynamostore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// A batch's queued members (engine.BatchStore) carry queue_status
// "<queue>#batch#<gen>" while they wait (job_item.go), so that the
// batch's leader finds them with one Query of the by_status index by
// ticket.

// statusBatch is the by_status partition of a queue's queued batch jobs.
const statusBatch job.Status = "batch"

// ListBatch queries the by_status index for batch b's queued jobs (its
// queue's batch partition, at its ticket): one Query, eventually
// consistent, so a job written a moment ago may not show.
func (s *Store) ListBatch(ctx context.Context, b engine.BatchRef, limit int) ([]job.Job, error) {
	in, err := s.byStatus(expression.Key(attrQueueStatus).Equal(expression.Value(queueStatus(b.Queue, b.Gen, statusBatch))).
		And(expression.Key(attrTicket).Equal(expression.Value(b.Ticket))))
	var out []job.Job
	if err == nil {
		err = s.queryPages(ctx, in, nil, func(res *dynamodb.QueryOutput) (bool, error) {
			for _, m := range res.Items {
				j, err := decodeJob(m)
				if err != nil {
					return false, err
				}
				if j.Status == job.Queued && j.Ticket == b.Ticket {
					out = append(out, j)
				}
			}
			return true, nil
		})
	}
	if err != nil {
		return nil, fmt.Errorf("list batch %s/%d: %w", b.Queue, b.Ticket, err)
	}
	slices.SortFunc(out, func(a, b job.Job) int { return cmp.Compare(a.ID, b.ID) })
	return out[:min(len(out), limit)], nil
}

// joinTake is a batched take all of whose jobs join the batch the
// caller's read of the queue shows open (engine.TakeRequest.Seen): one
// UpdateItem that adds them to batch_fill, on condition that the batch
// is still the line's last (batch_at = clock), has room for them and
// still takes jobs, whatever else moved meanwhile (a gate's last start,
// another take's join). A busy batch queue's takes are mostly joins:
// they do not compare-and-set the whole state, which every gate and
// every other take would refuse. It answers ok false, with the state
// that refused it when the condition failed, where it does not apply:
// the caller takes by compare-and-set.
func (s *Store) joinTake(ctx context.Context, r engine.TakeRequest) (tk engine.Taken, seen slot.State, ok bool, err error) {
	seen = r.Seen
	next, want := r.Apply(seen)
	if r.N != r.Line || r.CutIns || seen.BatchFill == 0 || next.Ticket != seen.Ticket || next.Gated != seen.Gated {
		return engine.Taken{}, seen, false, nil // it opens a batch, or moves more than the batch
	}
	var refused bool
	tk, err = writeState(ctx, s, stateWrite[engine.Taken]{
		op: "take ticket", what: "take ticket " + r.Queue, queue: r.Queue, gen: r.Gen, limits: r.LimitList(), tries: 1,
		exprs: func(tok string) exprs { return joinExprs(r, seen, tok) },
		after: func(m map[string]types.AttributeValue) (engine.Taken, error) {
			st, _, err := decodeState(m)
			if err != nil {
				return engine.Taken{}, fmt.Errorf("take ticket %s: %w", r.Queue, err)
			}
			want.State = st
			return want, nil
		},
		refused: func(st slot.State) error {
			refused, seen = true, st
			return nil
		},
	})
	if refused && errors.Is(err, errKeptChanging) {
		return engine.Taken{}, seen, false, nil
	}
	return tk, seen, err == nil, err
}

// joinExprs is joinTake's write from state seen: batch_fill moved by
// r.N on condition that the batch seen is the line's last, with room.
func joinExprs(r engine.TakeRequest, seen slot.State, tok string) exprs {
	e := newExpr()
	wt, fill := e.n(attrWriteToken), e.n(attrBatchFill)
	bat := e.v(":bat", timeNum(seen.BatchAt))
	cond := limitCond(e, r.LimitList()) +
		" AND (attribute_not_exists(" + wt + ") OR " + wt + " <> " + e.v(":tok", str(tok)) + ")" +
		" AND " + e.n(attrBatchTicket) + " = " + e.v(":bt", num(seen.BatchTicket)) +
		" AND " + e.n(attrBatchAt) + " = " + bat + " AND " + e.n(attrClock) + " = " + bat +
		" AND " + fill + " <= " + e.v(":most", num(int64(r.Batch.Max-r.N))) +
		" AND " + e.n(attrBatchAt) + " >= " + e.v(":cut", timeNum(r.Now.Add(r.Batch.Margin))) +
		genCond(e, r.Gen)
	upd := "SET " + fill + " = " + fill + " + " + e.v(":n", num(int64(r.N))) + ", " + wt + " = :tok"
	return e.build(upd, cond)
}
