package dynamostore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
)

// putConcurrency bounds the conditional PutItems CreateJobs has in flight.
const putConcurrency = 16

// defaultListLimit is ListJobs' cap when the request gives none.
const defaultListLimit = 100

// CreateJobs puts each job only if its key is free, one conditional
// PutItem per job, up to putConcurrency at once. Single puts cost half of
// the same writes in a transaction, and a batch needs no atomicity: each
// job stands on its own (its id makes it idempotent), so a retry of a call
// that failed half-way reports the stored ones as existing. An existing
// item that carries this call's write token was created by this call, in
// an attempt the SDK retried after it had landed.
func (s *Store) CreateJobs(ctx context.Context, jobs []job.Job) ([]bool, error) {
	for i := range jobs {
		if jobs[i].Queue == "" || jobs[i].ID == "" {
			return nil, fmt.Errorf("create jobs: jobs[%d] has no queue or id", i)
		}
	}
	created := make([]bool, len(jobs))
	errs := make([]error, len(jobs))
	tok := newToken()
	sem := make(chan struct{}, putConcurrency)
	var wg sync.WaitGroup
	for i := range jobs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			created[i], errs[i] = s.createJob(ctx, jobs[i], tok)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("create jobs: %w", err)
	}
	return created, nil
}

// createJob puts one job if its key is free, holds a job of another
// generation (a deleted queue's) or an expired job (absent, though TTL has
// not deleted it yet), and reports whether it did.
func (s *Store) createJob(ctx context.Context, j job.Job, tok string) (bool, error) {
	expired := expression.Name(attrExpiresAt).LessThanEqual(expression.Value(timeNum(s.now())))
	old, ok, err := s.putIf(ctx, jobItem(j, tok), when(replaceable(j.Gen).Or(expired)))
	if err != nil {
		return false, fmt.Errorf("%s: %w", j.Ref(), err)
	}
	return ok || hasToken(old, tok), nil
}

// replaceable is the condition that a job of generation gen may be
// created at its key: no item there, or one of an older generation (a
// queue deleted and created again; generations are ordered, so an
// enqueue of the deleted generation never replaces the new one's job).
func replaceable(gen int64) expression.ConditionBuilder {
	g, random := expression.Name(attrGen), expression.Value(engine.RandomGens)
	switch {
	case gen == 0:
		return itemMissing()
	case gen >= engine.RandomGens:
		// A queue's random generation, from before they were ordered:
		// it replaces another random one only (engine.GenBefore).
		return itemMissing().Or(expression.AttributeNotExists(g)).
			Or(expression.And(g.GreaterThanEqual(random), g.NotEqual(expression.Value(gen))))
	}
	return itemMissing().Or(expression.AttributeNotExists(g)).
		Or(g.LessThan(expression.Value(gen))).Or(g.GreaterThanEqual(random))
}

// sameGen is the condition that an existing job item is of generation gen
// (which items leave out when it is 0).
func sameGen(gen int64) expression.ConditionBuilder {
	if gen == 0 {
		return expression.AttributeNotExists(expression.Name(attrGen))
	}
	return expression.Name(attrGen).Equal(expression.Value(gen))
}

// GetJob reads a job strongly consistently. ErrJobNotFound, also for one
// that expired but is not yet deleted.
func (s *Store) GetJob(ctx context.Context, k job.Ref) (job.Job, error) {
	m, err := s.getItem(ctx, jobKey(k))
	if err != nil {
		return job.Job{}, fmt.Errorf("get job %s: %w", k, err)
	}
	if len(m) == 0 {
		return job.Job{}, fmt.Errorf("get job %s: %w", k, engine.ErrJobNotFound)
	}
	j, err := decodeJob(m)
	if err != nil {
		return job.Job{}, fmt.Errorf("get job %s: %w", k, err)
	}
	if j.Expired(s.now()) {
		return job.Job{}, fmt.Errorf("get job %s: %w", k, engine.ErrJobNotFound)
	}
	return j, nil
}

// UpdateJob replaces the job item if it is at version from (a conditional
// PutItem). ErrConflict, or ErrJobNotFound when there is no item;
// job.ErrIllegalMove, and nothing written, for a status change
// job.CanMove does not allow.
func (s *Store) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	k := job.Ref{Queue: j.Queue, ID: j.ID}
	if err := job.CheckMove(from.Status, j.Status); err != nil {
		return fmt.Errorf("update job %s: %w", k, err)
	}
	tok := newToken()
	old, ok, err := s.putIf(ctx, jobItem(j, tok), when(expression.And(
		expression.Name(attrStatus).Equal(expression.Value(string(from.Status))),
		expression.Name(attrTicket).Equal(expression.Value(from.Ticket)),
		expression.Name(attrAttempt).Equal(expression.Value(from.Attempt)),
		sameGen(from.Gen),
	)))
	if err != nil {
		return fmt.Errorf("update job %s: %w", k, err)
	}
	if !ok {
		old, err := s.orRead(ctx, jobKey(k), old)
		if err != nil {
			return fmt.Errorf("update job %s: %w", k, err)
		}
		if old == nil {
			return fmt.Errorf("update job %s: %w", k, engine.ErrJobNotFound)
		}
		if hasToken(old, tok) {
			return nil // the SDK retried this very update after it had landed
		}
		return fmt.Errorf("update job %s: %w", k, engine.ErrConflict)
	}
	return nil
}

// unexpired is the filter that hides expired jobs, which DynamoDB's TTL
// deletes only eventually.
func (s *Store) unexpired() expression.ConditionBuilder {
	x := expression.Name(attrExpiresAt)
	return expression.AttributeNotExists(x).Or(x.GreaterThan(expression.Value(timeNum(s.now()))))
}

// byStatus is the Query of IndexByStatus on key condition kc that leaves
// out expired jobs.
func (s *Store) byStatus(kc expression.KeyConditionBuilder) (*dynamodb.QueryInput, error) {
	in, err := queryOf(expression.NewBuilder().WithKeyCondition(kc).WithFilter(s.unexpired()))
	if err != nil {
		return nil, err
	}
	in.IndexName = aws.String(IndexByStatus)
	return in, nil
}

// ListJobs queries IndexByStatus (the partition of the queue's generation
// and the status) from ticket r.After on, filtering expired
// jobs, until it has r.Limit jobs or the index ends. The index is
// eventually consistent: a change of a moment ago may not show yet.
func (s *Store) ListJobs(ctx context.Context, r engine.ListRequest) ([]job.Job, error) {
	if !r.Status.Listed() {
		return nil, fmt.Errorf("list jobs %s/%s: %w", r.Queue, r.Status, engine.ErrNotListed)
	}
	limit := r.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	in, err := s.byStatus(expression.Key(attrQueueStatus).Equal(expression.Value(queueStatus(r.Queue, r.Gen, r.Status))).
		And(expression.Key(attrTicket).GreaterThan(expression.Value(r.After))))
	var out []job.Job
	if err == nil {
		err = s.queryPages(ctx, in, func() int32 { return int32(min(limit-len(out), 1000)) }, func(res *dynamodb.QueryOutput) (bool, error) {
			for _, m := range res.Items {
				j, err := decodeJob(m)
				if err != nil {
					return false, err
				}
				out = append(out, j)
			}
			return len(out) < limit, nil
		})
	}
	if err != nil {
		return nil, fmt.Errorf("list jobs %s/%s: %w", r.Queue, r.Status, err)
	}
	// Tickets are unique in a queue; the id only orders a corrupt tie.
	slices.SortStableFunc(out, func(a, b job.Job) int {
		return cmp.Or(cmp.Compare(a.Ticket, b.Ticket), cmp.Compare(a.ID, b.ID))
	})
	return out[:min(len(out), limit)], nil
}

// CountJobs counts with Select COUNT over IndexByStatus (the queue's
// generation's partition), page by page,
// leaving out expired jobs. Each page reads up to 1 MB of index entries:
// counting costs as much as listing.
func (s *Store) CountJobs(ctx context.Context, queue string, gen int64, status job.Status) (int, error) {
	if !status.Listed() {
		return 0, fmt.Errorf("count jobs %s/%s: %w", queue, status, engine.ErrNotListed)
	}
	in, err := s.byStatus(expression.Key(attrQueueStatus).Equal(expression.Value(queueStatus(queue, gen, status))))
	n := 0
	if err == nil {
		in.Select = types.SelectCount
		err = s.queryPages(ctx, in, nil, func(res *dynamodb.QueryOutput) (bool, error) {
			n += int(res.Count)
			return true, nil
		})
	}
	if err != nil {
		return 0, fmt.Errorf("count jobs %s/%s: %w", queue, status, err)
	}
	return n, nil
}
