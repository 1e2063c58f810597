package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// Sentinels of a wait that saw its job end otherwise than succeeded.
var (
	// ErrJobFailed: the job ended failed (its last attempt failed, or a
	// SkipRetry). The *JobError holds its record: LastError, History,
	// Result (a failed HTTP target's status and body, say).
	ErrJobFailed = errors.New("job failed")
	// ErrJobCancelled: the job was cancelled (or purged) before it
	// started.
	ErrJobCancelled = errors.New("job cancelled")
)

// JobError is Wait's answer for a job that ended failed or cancelled.
// errors.Is matches ErrJobFailed or ErrJobCancelled.
type JobError struct {
	Job api.Job
}

func (e *JobError) Error() string {
	if e.Job.Status == api.Cancelled {
		return fmt.Sprintf("slotq: job %s/%s was cancelled", e.Job.Queue, e.Job.ID)
	}
	return fmt.Sprintf("slotq: job %s/%s failed after attempt %d: %s", e.Job.Queue, e.Job.ID, e.Job.Attempt, e.Job.LastError)
}

// Is reports whether target is the sentinel of the job's status.
func (e *JobError) Is(target error) bool {
	if e.Job.Status == api.Cancelled {
		return target == ErrJobCancelled
	}
	return target == ErrJobFailed
}

// Wait's polling defaults.
const (
	// DefaultWaitFirst is the first pause between two reads of the job.
	DefaultWaitFirst = 200 * time.Millisecond
	// DefaultWaitMax is the longest pause between two reads.
	DefaultWaitMax = 5 * time.Second
)

// WaitInput names the job to wait for and how often to look.
type WaitInput struct {
	Queue string
	JobID string
	// First is the first pause between two reads of the job (default
	// DefaultWaitFirst); each next pause is half as long again, up to
	// Max (default DefaultWaitMax). A job expected to take long waits
	// cheaper with a longer First.
	First, Max time.Duration
}

// WaitOutput is the job's record as Wait last read it: final when Wait
// returns nil or a *JobError.
type WaitOutput struct {
	Job api.Job
	// Polls counts the reads Wait made (GetJob calls).
	Polls int
}

// Wait reads the job (GetJob) until it ends, pausing between reads with a
// backoff from First to Max, and returns its final record: Job.Result
// holds what the target answered. It returns nil when the job succeeded,
// a *JobError when it failed (ErrJobFailed) or was cancelled
// (ErrJobCancelled), ctx's error when ctx ends first (with the record as
// last read, if any), and an *Error (ErrJobNotFound, ErrQueueNotFound) or
// a call's error as GetJob does. A job run again (RetryJobs) after Wait
// returned is waited for by waiting again.
//
// Each read is one admin invocation and two strong DynamoDB reads (the
// queue, the job: 1 read unit per 4 KB of the record); docs/costs.md says
// what a second of waiting costs.
func (c *Client) Wait(ctx context.Context, in *WaitInput, optFns ...func(*Options)) (*WaitOutput, error) {
	first, most := in.First, in.Max
	if first <= 0 {
		first = DefaultWaitFirst
	}
	if most <= 0 {
		most = DefaultWaitMax
	}
	most = max(most, first)
	out := &WaitOutput{}
	pause := first
	for {
		got, err := c.GetJob(ctx, &GetJobInput{Queue: in.Queue, JobID: in.JobID}, optFns...)
		if err != nil {
			if ctx.Err() != nil {
				return out, fmt.Errorf("slotq wait %s/%s: %w", in.Queue, in.JobID, context.Cause(ctx))
			}
			return out, err
		}
		out.Polls++
		out.Job = got.Job
		switch got.Job.Status {
		case api.Succeeded:
			return out, nil
		case api.Failed, api.Cancelled:
			return out, &JobError{Job: got.Job}
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return out, fmt.Errorf("slotq wait %s/%s: still %s: %w", in.Queue, in.JobID, out.Job.Status, context.Cause(ctx))
		case <-t.C:
		}
		pause = min(most, pause*3/2)
	}
}

// EnqueueAndWait enqueues one job (in.Job; a batch is refused) and waits
// for it to end (Wait, with wait's First and Max; wait may be nil): the
// call a producer makes when it wants the job's result, as a keyed serial
// queue's run(key, task) resolves with the task's. An id the queue knows
// already is waited for as it is (Existing): a job that ended answers at
// once. The EnqueueOutput is returned with the wait's answer, so a
// caller whose ctx ended knows the job is accepted and may wait again.
func (c *Client) EnqueueAndWait(ctx context.Context, in *EnqueueInput, wait *WaitInput, optFns ...func(*Options)) (*EnqueueOutput, *WaitOutput, error) {
	if in.Job == nil || len(in.Jobs) > 0 {
		return nil, nil, &Error{Op: "enqueue", Code: "invalid_wait", Field: "jobs", Message: "EnqueueAndWait takes one job (Job), not a batch"}
	}
	enq, err := c.Enqueue(ctx, in, optFns...)
	if err != nil {
		return nil, nil, err
	}
	w := WaitInput{}
	if wait != nil {
		w = *wait
	}
	w.Queue, w.JobID = enq.Queue, enq.Jobs[0].JobID
	out, err := c.Wait(ctx, &w, optFns...)
	return enq, out, err
}
