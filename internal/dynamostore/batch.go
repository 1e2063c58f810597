package dynamostore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
)

// A batch's items (engine.BatchStore): its leader, one small item a
// batch, and its queued jobs, which carry queue_status
// "<queue>#batch#<gen>" while they wait (job_item.go), so that the
// leader finds them with one Query of the by_status index by ticket.

// statusBatch is the by_status partition of a queue's queued batch jobs.
const statusBatch job.Status = "batch"

// attrLeader is the leader's job id on a batch's item.
const attrLeader = "leader"

// batchKey is the key of batch b's item: in its queue's partition of
// batches, one sort key a generation and ticket.
func batchKey(b engine.BatchRef) map[string]types.AttributeValue {
	return key("B#"+b.Queue, strconv.FormatInt(b.Gen, 10)+"#"+strconv.FormatInt(b.Ticket, 10))
}

// LeadBatch writes jobID as batch b's leader with one conditional
// PutItem (no item yet, or its leader is jobID already: a delivery sent
// again), and, refused, answers the leader the item holds. The item
// expires (TTL) after until.
func (s *Store) LeadBatch(ctx context.Context, b engine.BatchRef, jobID string, until time.Time) (string, error) {
	k := batchKey(b)
	it := batchKey(b)
	it[attrLeader] = str(jobID)
	it[attrTTL] = num(ttlSeconds(until))
	old, ok, err := s.putIf(ctx, it, when(expression.AttributeNotExists(expression.Name(attrPK)).
		Or(expression.Name(attrLeader).Equal(expression.Value(jobID)))))
	if err != nil {
		return "", fmt.Errorf("lead batch %s/%d: %w", b.Queue, b.Ticket, err)
	}
	if ok {
		return jobID, nil
	}
	if old, err = s.orRead(ctx, k, old); err != nil {
		return "", fmt.Errorf("lead batch %s/%d: %w", b.Queue, b.Ticket, err)
	}
	r := item{m: old}
	leader := r.str(attrLeader)
	if r.err != nil || leader == "" {
		return "", fmt.Errorf("lead batch %s/%d: no leader on the batch's item", b.Queue, b.Ticket)
	}
	return leader, nil
}

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
