package console

import (
	"context"
	"errors"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// Source is every call the console makes: a subset of the admin
// function's operations, so the console can do nothing its operator's
// own credentials (lambda:InvokeFunction on the admin function) do not
// allow. FromClient implements it over pkg/client; tests use a fake.
type Source interface {
	// Queues lists every queue with its configuration and state (admin list).
	Queues(ctx context.Context) ([]api.Queue, error)
	// Stats returns a queue's figures (admin stats), with its recent
	// activity from its metrics if activity is set: reading them is
	// most of what stats costs on a stack (CloudWatch GetMetricData).
	Stats(ctx context.Context, queue string, activity bool) (QueueStats, error)
	// Starts lists the queue's starts from since on, by start time, up
	// to the admin function's most (admin starts): the timeline's
	// marks. An error reading them (the stack's log) is returned as an
	// error the page shows beside what else it has.
	Starts(ctx context.Context, queue string, since time.Time) ([]api.Start, error)
	// Jobs lists up to limit of a queue's parked or failed jobs with
	// tickets after after, by ticket (admin list with a queue).
	Jobs(ctx context.Context, queue string, status api.Status, after int64, limit int) ([]api.Job, error)
	// Job returns a job's record (admin get).
	Job(ctx context.Context, queue, id string) (api.Job, error)
	// Pause stops a queue's gate, until the zero time or until until
	// (admin pause).
	Pause(ctx context.Context, queue string, until time.Time) error
	// Resume lifts a pause and releases the parked jobs (admin resume).
	Resume(ctx context.Context, queue string) error
	// Cancel cancels a job that has not started (admin cancel).
	Cancel(ctx context.Context, queue, id string) error
	// Retry runs a failed or cancelled job again under its id; by says
	// who asked, for its history (admin retry).
	Retry(ctx context.Context, queue, id, by string) error
	// Purge cancels every job of the queue that has not started and
	// returns how many (admin purge).
	Purge(ctx context.Context, queue string) (int, error)
	// Keys lists a queue's keys with jobs waiting or running, busiest
	// first (admin list_keys); Key reads one key (admin get_key). Both
	// are for a queue with key_limits.
	Keys(ctx context.Context, queue string) ([]api.KeyInfo, error)
	Key(ctx context.Context, queue, key string) (api.KeyInfo, error)
}

// QueueStats is the answer of stats: the queue's counters and lanes, and
// what it did over the last minutes from its metrics (nil, with
// ActivityError saying why, when they could not be read).
type QueueStats struct {
	api.Stats
	Activity      *api.Activity
	ActivityError string
}

// ErrNotFound is what a Source returns, wrapped, for a queue or job that
// does not exist: the console answers 404.
var ErrNotFound = errors.New("not found")
