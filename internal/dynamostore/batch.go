package dynamostore

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
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
