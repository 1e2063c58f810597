package console

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// FromClient returns the Source that reads and acts through c, the
// admin function's client: the console's only way to the stack.
func FromClient(c *client.Client) Source { return clientSource{c} }

// clientSource is Source over pkg/client: one admin call per method.
type clientSource struct{ c *client.Client }

var _ Source = clientSource{}

func (s clientSource) Queues(ctx context.Context) ([]api.Queue, error) {
	out, err := s.c.ListQueues(ctx, &client.ListQueuesInput{})
	if err != nil {
		return nil, notFound(err)
	}
	return out.Queues, nil
}

func (s clientSource) Stats(ctx context.Context, queue string, activity bool) (QueueStats, error) {
	out, err := s.c.GetStats(ctx, &client.GetStatsInput{Queue: queue, NoActivity: !activity})
	if err != nil {
		return QueueStats{}, notFound(err)
	}
	return QueueStats{Stats: out.Stats, Activity: out.Activity, ActivityError: out.ActivityError}, nil
}

// maxStarts is the most starts one timeline reads: the admin function's
// most for one call.
const maxStarts = 1000

func (s clientSource) Starts(ctx context.Context, queue string, since time.Time) ([]api.Start, error) {
	out, err := s.c.ListStarts(ctx, &client.ListStartsInput{Queue: queue, Since: since, Limit: maxStarts})
	if err != nil {
		return nil, notFound(err)
	}
	if out.StartsError != "" {
		return nil, errors.New(out.StartsError)
	}
	return out.Starts, nil
}

func (s clientSource) Jobs(ctx context.Context, queue string, status api.Status, after int64, limit int) ([]api.Job, error) {
	out, err := s.c.ListJobs(ctx, &client.ListJobsInput{Queue: queue, Status: status, After: after, Limit: limit})
	if err != nil {
		return nil, notFound(err)
	}
	return out.Jobs, nil
}

func (s clientSource) Job(ctx context.Context, queue, id string) (api.Job, error) {
	out, err := s.c.GetJob(ctx, &client.GetJobInput{Queue: queue, JobID: id})
	if err != nil {
		return api.Job{}, notFound(err)
	}
	return out.Job, nil
}

func (s clientSource) Pause(ctx context.Context, queue string, until time.Time) error {
	_, err := s.c.PauseQueue(ctx, &client.PauseQueueInput{Queue: queue, Until: until})
	return notFound(err)
}

func (s clientSource) Resume(ctx context.Context, queue string) error {
	_, err := s.c.ResumeQueue(ctx, &client.ResumeQueueInput{Queue: queue})
	return notFound(err)
}

func (s clientSource) Cancel(ctx context.Context, queue, id string) error {
	_, err := s.c.CancelJob(ctx, &client.CancelJobInput{Queue: queue, JobID: id})
	return notFound(err)
}

func (s clientSource) Retry(ctx context.Context, queue, id, by string) error {
	_, err := s.c.RetryJobs(ctx, &client.RetryJobsInput{Queue: queue, JobIDs: []string{id}, By: by})
	return notFound(err)
}

func (s clientSource) Purge(ctx context.Context, queue string) (int, error) {
	out, err := s.c.PurgeQueue(ctx, &client.PurgeQueueInput{Queue: queue})
	if err != nil {
		return 0, notFound(err)
	}
	return out.Cancelled, nil
}

func (s clientSource) Keys(ctx context.Context, queue string) ([]api.KeyInfo, error) {
	out, err := s.c.ListKeys(ctx, &client.ListKeysInput{Queue: queue})
	if err != nil {
		return nil, notFound(err)
	}
	return out.Keys, nil
}

func (s clientSource) Key(ctx context.Context, queue, key string) (api.KeyInfo, error) {
	out, err := s.c.GetKey(ctx, &client.GetKeyInput{Queue: queue, Key: key})
	if err != nil {
		return api.KeyInfo{}, notFound(err)
	}
	return out.Key, nil
}

// notFound adds ErrNotFound to the client's not-found errors.
func notFound(err error) error {
	if errors.Is(err, client.ErrQueueNotFound) || errors.Is(err, client.ErrJobNotFound) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}
