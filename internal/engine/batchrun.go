package engine

import (
	"context"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// BatchRunner is a Runner that can run the jobs of one batch start in one call per target.
type BatchRunner interface {
	// RunBatch runs one attempt of each job. errs[i] is jobs[i]'s outcome as Runner.Run's error would say it (nil: succeeded; attempt.RetryAfter: slow down; SkipRetry-wrapped: failed for good; other: failed), and it sets jobs[i].Result (and ResultDropped) as Run's attempt result would. The jobs may name different kinds or targets: one call per kind or target, the calls at once. ctx carries the target timeout for the whole batch.
	RunBatch(ctx context.Context, jobs []*job.Job, cfg slot.Config) []error
}
