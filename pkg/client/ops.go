package client

import (
	"context"
	"slices"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/slotq/slotq/pkg/api"
)

// EnqueueInput is one job (Job) or a batch (Jobs, at most api.MaxBatch)
// for a queue; Interval is used only if this call creates the queue. It
// is the enqueue function's request (events/enqueue.json).
type EnqueueInput = api.EnqueueRequest

// EnqueueOutput holds the accepted jobs in request order: each one's
// job_id, ticket, slot_at (when it is expected to start), position (the
// tickets ahead of it) and status (queued, or parked when its slot is
// beyond the transport's reach or its queue is paused); for a job with a
// key, the key and key_ahead, the jobs of its key accepted before it and
// not ended, which it starts after (docs/guarantees.md §12). A job with
// a debounce_key (api.Spec.DebounceKey) that joined a waiting job of its
// key is answered status debounced (api.StatusDebounced), with
// debounced_into the id of the job that will start with its payload.
type EnqueueOutput = api.EnqueueResult

// Enqueue accepts one job or a batch: all of them, or none with an
// *Error naming the field at fault. A job with an ID is enqueued once per
// queue: enqueuing it again answers the first acceptance with Existing
// set, so an enqueue that failed with a *FunctionError is safe to retry.
// A queue that does not exist is created with Interval (or the stack's
// default).
//
// When ctx carries a span (OpenTelemetry's trace.SpanContextFromContext),
// each job that sets no TraceParent of its own takes its W3C trace
// context: the job's spans join the caller's trace, and its target
// receives it (docs/tracing.md). in is not changed.
func (c *Client) Enqueue(ctx context.Context, in *EnqueueInput, optFns ...func(*Options)) (*EnqueueOutput, error) {
	in = withTraceContext(ctx, in)
	var res api.EnqueueResponse
	if err := c.invoke(ctx, "enqueue", true, in, &res, func() *api.Error { return res.Error }, optFns); err != nil {
		return nil, err
	}
	return &EnqueueOutput{Queue: res.Queue, Jobs: res.Jobs}, nil
}

// admin runs one admin operation.
func (c *Client) admin(ctx context.Context, r api.AdminRequest, optFns []func(*Options)) (*api.AdminResponse, error) {
	var res api.AdminResponse
	if err := c.invoke(ctx, r.Op, false, r, &res, func() *api.Error { return res.Error }, optFns); err != nil {
		return nil, err
	}
	return &res, nil
}

// CreateQueueInput names a new queue and its configuration.
type CreateQueueInput struct {
	Queue string
	// Config's zero fields take the stack's defaults (DefaultInterval,
	// AllowedTargets), then slot's. Nil: every default.
	Config *api.Config
}

// CreateQueueOutput is the queue as created, defaults filled.
type CreateQueueOutput struct {
	Queue api.Queue
}

// CreateQueue creates a queue. ErrQueueExists if it exists.
func (c *Client) CreateQueue(ctx context.Context, in *CreateQueueInput, optFns ...func(*Options)) (*CreateQueueOutput, error) {
	var u *api.ConfigUpdate
	if in.Config != nil {
		v := in.Config.Update()
		u = &v
	}
	res, err := c.admin(ctx, api.AdminRequest{Op: "create", Queue: in.Queue, Config: u}, optFns)
	if err != nil {
		return nil, err
	}
	return &CreateQueueOutput{Queue: deref(res.Queue)}, nil
}

// ConfigureQueueInput changes a queue's configuration: give Update to
// change some settings and keep the others, or Config to replace it whole.
type ConfigureQueueInput struct {
	Queue string
	// Update lists the settings to change; those it leaves nil keep the
	// queue's values.
	Update *api.ConfigUpdate
	// Config, when Update is nil, replaces the whole configuration: its
	// zero fields take their defaults, not the queue's current values.
	Config api.Config
}

// ConfigureQueueOutput is the queue as configured, and what the new
// limits did to the jobs already booked.
type ConfigureQueueOutput struct {
	Queue api.Queue
	// Reslot says how many waiting jobs moved to a new slot_at, and by
	// how much at most.
	Reslot api.Reslot
}

// ConfigureQueue changes a queue's configuration (Update) or replaces it
// (Config). A new limit applies from the change on: the jobs waiting in
// line beyond the transport's reach move to the slots it gives them
// (Reslot says how many); an enqueue after it is answered by it.
func (c *Client) ConfigureQueue(ctx context.Context, in *ConfigureQueueInput, optFns ...func(*Options)) (*ConfigureQueueOutput, error) {
	req := api.AdminRequest{Op: "configure", Queue: in.Queue, Config: in.Update}
	if in.Update == nil {
		u := in.Config.Update()
		req.Config, req.Reset = &u, true
	}
	res, err := c.admin(ctx, req, optFns)
	if err != nil {
		return nil, err
	}
	return &ConfigureQueueOutput{Queue: deref(res.Queue), Reslot: deref(res.Reslot)}, nil
}

// PauseQueueInput names the queue to pause.
type PauseQueueInput struct {
	Queue string
	// Until, if not zero, is when the resume function lifts the pause by
	// itself. It must lie in the future.
	Until time.Time
}

// PauseQueueOutput is the queue's state after the pause.
type PauseQueueOutput struct {
	State api.QueueState
}

// PauseQueue stops the queue's gate: once it returns, no job of the queue
// starts until the queue is resumed (or Until comes).
func (c *Client) PauseQueue(ctx context.Context, in *PauseQueueInput, optFns ...func(*Options)) (*PauseQueueOutput, error) {
	r := api.AdminRequest{Op: "pause", Queue: in.Queue}
	if !in.Until.IsZero() {
		u := in.Until.UTC()
		r.Until = &u
	}
	res, err := c.admin(ctx, r, optFns)
	if err != nil {
		return nil, err
	}
	return &PauseQueueOutput{State: deref(res.State)}, nil
}

// ResumeQueueInput names the queue to resume.
type ResumeQueueInput struct {
	Queue string
}

// ResumeQueueOutput reports the release of the queue's parked jobs.
type ResumeQueueOutput struct {
	Report api.ResumeReport
}

// ResumeQueue lifts a pause now and releases the queue's parked jobs,
// re-ticketed in their old order.
func (c *Client) ResumeQueue(ctx context.Context, in *ResumeQueueInput, optFns ...func(*Options)) (*ResumeQueueOutput, error) {
	res, err := c.admin(ctx, api.AdminRequest{Op: "resume", Queue: in.Queue}, optFns)
	if err != nil {
		return nil, err
	}
	return &ResumeQueueOutput{Report: deref(res.Report)}, nil
}

// PurgeQueueInput names the queue to purge.
type PurgeQueueInput struct {
	Queue string
}

// PurgeQueueOutput counts the jobs the purge cancelled.
type PurgeQueueOutput struct {
	Cancelled int
}

// PurgeQueue cancels every job of the queue that has not started.
func (c *Client) PurgeQueue(ctx context.Context, in *PurgeQueueInput, optFns ...func(*Options)) (*PurgeQueueOutput, error) {
	res, err := c.admin(ctx, api.AdminRequest{Op: "purge", Queue: in.Queue}, optFns)
	if err != nil {
		return nil, err
	}
	return &PurgeQueueOutput{Cancelled: deref(res.Cancelled)}, nil
}

// DeleteQueueInput names the queue to delete.
type DeleteQueueInput struct {
	Queue string
}

// DeleteQueueOutput counts the waiting jobs the delete cancelled.
type DeleteQueueOutput struct {
	Cancelled int
}

// DeleteQueue deletes a queue and cancels its waiting jobs.
func (c *Client) DeleteQueue(ctx context.Context, in *DeleteQueueInput, optFns ...func(*Options)) (*DeleteQueueOutput, error) {
	res, err := c.admin(ctx, api.AdminRequest{Op: "delete", Queue: in.Queue}, optFns)
	if err != nil {
		return nil, err
	}
	return &DeleteQueueOutput{Cancelled: deref(res.Cancelled)}, nil
}

// GetStatsInput names a queue.
type GetStatsInput struct {
	Queue string
	// NoActivity leaves Activity out: the admin function reads no
	// metrics (on a stack, CloudWatch GetMetricData of 10 metrics, $0.0001
	// a call), for a caller that polls the counters often.
	NoActivity bool
}

// GetStatsOutput holds the queue's configuration, state and figures:
// waiting (from its counters), parked, failed, lag and backlog, its lanes
// (attempts running under max_running; keys held and waited for, jobs
// waiting on keys and for a running place); and Activity, what it did
// over the last 15 minutes, read from its metrics (CloudWatch on a stack;
// nil, with ActivityError saying why, when they could not be read).
type GetStatsOutput struct {
	Stats         api.Stats
	Activity      *api.Activity
	ActivityError string
}

// GetStats returns a queue's configuration, state and figures.
func (c *Client) GetStats(ctx context.Context, in *GetStatsInput, optFns ...func(*Options)) (*GetStatsOutput, error) {
	res, err := c.admin(ctx, api.AdminRequest{Op: "stats", Queue: in.Queue, NoActivity: in.NoActivity}, optFns)
	if err != nil {
		return nil, err
	}
	return &GetStatsOutput{Stats: deref(res.Stats), Activity: res.Activity, ActivityError: res.ActivityError}, nil
}

// ListStartsInput names a queue and when its starts listed begin.
type ListStartsInput struct {
	Queue string
	// Since is when the starts listed begin. Zero: 15 minutes ago. It
	// may lie at most an hour back: starts are read from the worker's
	// recent log.
	Since time.Time
	// Limit caps the starts. Default (0) 200, at most 1000.
	Limit int
}

// ListStartsOutput holds the queue's starts from Since on, by start time.
type ListStartsOutput struct {
	Starts []api.Start
	// More says the list stopped at Limit: ask again with Since the last
	// start's StartedAt (and drop the starts already seen).
	More bool
	// StartsError says why Starts is empty when the worker's log could
	// not be read (the queue exists; CloudWatch Logs failed or throttled
	// the read, or the stack logs no starts).
	StartsError string
}

// ListStarts lists a queue's recent starts, each with its slot, start
// time and lateness: a live timeline of the queue. On a stack they are
// read from the worker's log group (CloudWatch Logs FilterLogEvents, five
// calls a second per account and Region); in the local runtime from the
// last 1000 starts of each queue it keeps in memory. ErrQueueNotFound for
// a queue that does not exist.
func (c *Client) ListStarts(ctx context.Context, in *ListStartsInput, optFns ...func(*Options)) (*ListStartsOutput, error) {
	r := api.AdminRequest{Op: api.OpStarts, Queue: in.Queue, Limit: in.Limit}
	if !in.Since.IsZero() {
		since := in.Since.UTC()
		r.Since = &since
	}
	res, err := c.admin(ctx, r, optFns)
	if err != nil {
		return nil, err
	}
	return &ListStartsOutput{Starts: res.Starts, More: res.More, StartsError: res.StartsError}, nil
}

// GetJobInput names a job.
type GetJobInput struct {
	Queue string
	JobID string
}

// GetJobOutput is the job's record.
type GetJobOutput struct {
	Job api.Job
}

// GetJob returns a job's record, whatever its status. ErrJobNotFound for
// a job that does not exist or whose retention has passed.
func (c *Client) GetJob(ctx context.Context, in *GetJobInput, optFns ...func(*Options)) (*GetJobOutput, error) {
	res, err := c.admin(ctx, api.AdminRequest{Op: "get", Queue: in.Queue, JobID: in.JobID}, optFns)
	if err != nil {
		return nil, err
	}
	return &GetJobOutput{Job: deref(res.Job)}, nil
}

// CancelJobInput names a job.
type CancelJobInput struct {
	Queue string
	JobID string
}

// CancelJobOutput is the cancelled job's record.
type CancelJobOutput struct {
	Job api.Job
}

// CancelJob cancels a job that has not started. ErrNotWaiting if it has
// started or ended.
func (c *Client) CancelJob(ctx context.Context, in *CancelJobInput, optFns ...func(*Options)) (*CancelJobOutput, error) {
	res, err := c.admin(ctx, api.AdminRequest{Op: "cancel", Queue: in.Queue, JobID: in.JobID}, optFns)
	if err != nil {
		return nil, err
	}
	return &CancelJobOutput{Job: deref(res.Job)}, nil
}

// ListJobsInput pages through one queue's jobs of a listed status.
type ListJobsInput struct {
	// Queue is required.
	Queue string
	// Status is api.Parked (the default) or api.Failed: only those are
	// listed (api.Status.Listed); get other jobs by id.
	Status api.Status
	// After lists jobs with tickets greater than After; 0 from the start.
	After int64
	// Limit caps the page. Default (0) 100.
	Limit int
}

// ListJobsOutput is one page of jobs, by ticket.
type ListJobsOutput struct {
	Jobs []api.Job
	// NextAfter is the After of the next page when this one is full; 0
	// when there is none.
	NextAfter int64
}

// ListJobs lists a queue's parked or failed jobs by ticket.
func (c *Client) ListJobs(ctx context.Context, in *ListJobsInput, optFns ...func(*Options)) (*ListJobsOutput, error) {
	if in.Queue == "" {
		// The admin function lists the queues for a list without one.
		return nil, &Error{Op: "list", Code: "invalid_queue", Field: "queue", Message: "ListJobs needs a queue; ListQueues lists the queues"}
	}
	res, err := c.admin(ctx, api.AdminRequest{Op: "list", Queue: in.Queue, Status: in.Status, After: in.After, Limit: in.Limit}, optFns)
	if err != nil {
		return nil, err
	}
	out := &ListJobsOutput{Jobs: res.Jobs}
	limit := in.Limit
	if limit == 0 {
		limit = 100
	}
	if n := len(res.Jobs); n > 0 && n >= limit {
		out.NextAfter = res.Jobs[n-1].Ticket
	}
	return out, nil
}

// ListJobsPaginator pages through a queue's jobs of one listed status
// (ListJobs), as the SDK's paginators do.
type ListJobsPaginator struct {
	c    *Client
	in   ListJobsInput
	done bool
}

// NewListJobsPaginator returns a paginator over in's queue's jobs, from
// in.After on.
func NewListJobsPaginator(c *Client, in *ListJobsInput) *ListJobsPaginator {
	return &ListJobsPaginator{c: c, in: *in}
}

// HasMorePages reports whether NextPage has a page to read.
func (p *ListJobsPaginator) HasMorePages() bool { return !p.done }

// NextPage reads the next page of jobs.
func (p *ListJobsPaginator) NextPage(ctx context.Context, optFns ...func(*Options)) (*ListJobsOutput, error) {
	out, err := p.c.ListJobs(ctx, &p.in, optFns...)
	if err != nil {
		return nil, err
	}
	p.in.After = out.NextAfter
	p.done = out.NextAfter == 0
	return out, nil
}

// RetryJobsInput asks to run failed or cancelled jobs of a queue again,
// under their ids: the jobs JobIDs names, or with Failed a page of the
// queue's failed jobs (the dead letters).
type RetryJobsInput struct {
	// Queue is required.
	Queue string
	// JobIDs names up to 100 jobs, each failed or cancelled: one that is
	// not refuses the whole call (ErrNotRetryable, Field "job_ids[i]")
	// and none is run again.
	JobIDs []string
	// Failed, instead of JobIDs, runs again the failed jobs with tickets
	// after After and up to UpTo, at most Limit (default 100, at most
	// 500). UpTo 0 takes the queue's ticket counter now; pass the
	// answer's UpTo and NextAfter on for the next page (or use
	// NewRetryFailedPaginator), so jobs that fail again meanwhile are
	// not run again by the same sweep.
	Failed bool
	After  int64
	UpTo   int64
	Limit  int
	// By says who asked, in each job's history: up to 64 of
	// [A-Za-z0-9_.:/@+-]. Default "admin".
	By string
}

// RetryJobsOutput lists the jobs run again, each with its new ticket,
// slot_at and status (queued, or parked on a paused queue or for a far
// slot).
type RetryJobsOutput struct {
	Jobs []api.Accepted
	// Skipped counts, for Failed, jobs listed as failed that had changed
	// when their retry was written (another retry ran them first).
	Skipped int
	// NextAfter and UpTo are, for Failed, the next page's After and UpTo;
	// NextAfter is 0 after the last page.
	NextAfter int64
	UpTo      int64
}

// RetryJobs runs failed or cancelled jobs again under their ids: each
// takes a new ticket at the end of the queue's line and goes through the
// gate like any job, so a mass retry keeps the queue's rate. Attempts
// keep counting, and the rerun has the queue's max_attempts of its own.
func (c *Client) RetryJobs(ctx context.Context, in *RetryJobsInput, optFns ...func(*Options)) (*RetryJobsOutput, error) {
	res, err := c.admin(ctx, api.AdminRequest{Op: "retry", Queue: in.Queue, JobIDs: in.JobIDs, Failed: in.Failed,
		After: in.After, UpTo: in.UpTo, Limit: in.Limit, By: in.By}, optFns)
	if err != nil {
		return nil, err
	}
	r := deref(res.Retried)
	return &RetryJobsOutput{Jobs: r.Jobs, Skipped: r.Skipped, NextAfter: r.NextAfter, UpTo: r.UpTo}, nil
}

// RetryFailedPaginator runs a queue's failed jobs again a page at a time
// (RetryJobs with Failed), each page one bounded call.
type RetryFailedPaginator struct {
	c    *Client
	in   RetryJobsInput
	done bool
}

// NewRetryFailedPaginator returns a paginator over in's queue's failed
// jobs; in.Failed is set for it, in.JobIDs must be empty.
func NewRetryFailedPaginator(c *Client, in *RetryJobsInput) *RetryFailedPaginator {
	p := &RetryFailedPaginator{c: c, in: *in}
	p.in.Failed = true
	return p
}

// HasMorePages reports whether NextPage has a page to run.
func (p *RetryFailedPaginator) HasMorePages() bool { return !p.done }

// NextPage runs the next page's failed jobs again.
func (p *RetryFailedPaginator) NextPage(ctx context.Context, optFns ...func(*Options)) (*RetryJobsOutput, error) {
	out, err := p.c.RetryJobs(ctx, &p.in, optFns...)
	if err != nil {
		return nil, err
	}
	p.in.After, p.in.UpTo = out.NextAfter, out.UpTo
	p.done = out.NextAfter == 0
	return out, nil
}

// RedriveInput bounds one redrive of the stack's dead-letter queue.
type RedriveInput struct {
	// Limit caps the messages received. Default (0) 100, at most 1000;
	// the answer's More says when some may be left.
	Limit int
}

// RedriveOutput says what the redrive did.
type RedriveOutput struct {
	Report api.RedriveReport
}

// Redrive moves the messages SQS moved to the slot queue's dead-letter
// queue (after a worker failed on them MaxReceiveCount times) back to the
// slot queue, each re-checked against its job: one whose job still waits
// for it is sent again, one whose job ended or moved on is dropped, a
// body that is no job envelope stays.
func (c *Client) Redrive(ctx context.Context, in *RedriveInput, optFns ...func(*Options)) (*RedriveOutput, error) {
	res, err := c.admin(ctx, api.AdminRequest{Op: "redrive", Limit: in.Limit}, optFns)
	if err != nil {
		return nil, err
	}
	return &RedriveOutput{Report: deref(res.Redrive)}, nil
}

// ListQueuesInput takes no parameters.
type ListQueuesInput struct{}

// ListQueuesOutput holds every queue, by name.
type ListQueuesOutput struct {
	Queues []api.Queue
}

// ListQueues lists every queue with its configuration and state.
func (c *Client) ListQueues(ctx context.Context, _ *ListQueuesInput, optFns ...func(*Options)) (*ListQueuesOutput, error) {
	res, err := c.admin(ctx, api.AdminRequest{Op: "list"}, optFns)
	if err != nil {
		return nil, err
	}
	return &ListQueuesOutput{Queues: res.Queues}, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// ListKeysInput names a queue.
type ListKeysInput struct {
	Queue string
}

// ListKeysOutput holds the queue's keys with jobs waiting or running (and
// those with limits of their own), busiest first (most pending), at most
// 1,000: each key's limits (its own, or the queue's key_limits), its jobs
// pending, held and waiting, and when its next start may come by its own
// limits.
type ListKeysOutput struct {
	Keys []api.KeyInfo
}

// ListKeys lists a queue's busy keys. ErrQueueNotFound for a queue that
// does not exist.
func (c *Client) ListKeys(ctx context.Context, in *ListKeysInput, optFns ...func(*Options)) (*ListKeysOutput, error) {
	res, err := c.admin(ctx, api.AdminRequest{Op: api.OpListKeys, Queue: in.Queue}, optFns)
	if err != nil {
		return nil, err
	}
	return &ListKeysOutput{Keys: res.Keys}, nil
}

// GetKeyInput names a key of a queue.
type GetKeyInput struct {
	Queue string
	Key   string
}

// GetKeyOutput is what the key shows, also when it has no jobs.
type GetKeyOutput struct {
	Key api.KeyInfo
}

// GetKey returns one key of a queue: its limits, jobs and next start.
func (c *Client) GetKey(ctx context.Context, in *GetKeyInput, optFns ...func(*Options)) (*GetKeyOutput, error) {
	res, err := c.admin(ctx, api.AdminRequest{Op: api.OpGetKey, Queue: in.Queue, Key: in.Key}, optFns)
	if err != nil {
		return nil, err
	}
	return &GetKeyOutput{Key: deref(res.Key)}, nil
}

// SetKeyLimitsInput gives keys of a queue limits of their own, or clears
// them: each of Keys names a key and its limits (up to three, each in any
// form), or nil Limits to clear them, so that the key follows the
// queue's key_limits again. At most api.MaxKeyOverrides keys a call; the
// queue must have key_limits.
type SetKeyLimitsInput struct {
	Queue string
	Keys  []api.KeyLimit
}

// SetKeyLimitsOutput holds each key as set, in the order given.
type SetKeyLimitsOutput struct {
	Keys []api.KeyInfo
}

// SetKeyLimits gives keys limits of their own or clears them. Bad input is
// an *Error naming the value (keys[2].limits[0].rate), and no key is
// changed. A key's starts already made count against its new limits.
func (c *Client) SetKeyLimits(ctx context.Context, in *SetKeyLimitsInput, optFns ...func(*Options)) (*SetKeyLimitsOutput, error) {
	res, err := c.admin(ctx, api.AdminRequest{Op: api.OpSetKeyLimits, Queue: in.Queue, Keys: in.Keys}, optFns)
	if err != nil {
		return nil, err
	}
	return &SetKeyLimitsOutput{Keys: res.Keys}, nil
}

// withTraceContext returns in with ctx's W3C trace context on each job
// that has none: a copy, when there is any to add. It is W3C's form
// whatever propagator the caller's process set globally: the enqueue
// request's traceparent field is W3C's traceparent.
func withTraceContext(ctx context.Context, in *EnqueueInput) *EnqueueInput {
	if in == nil {
		return in
	}
	tc := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, tc)
	parent, state := tc["traceparent"], tc["tracestate"]
	if parent == "" {
		return in
	}
	set := func(s *api.Spec) {
		if s.TraceParent == "" {
			s.TraceParent, s.TraceState = parent, state
		}
	}
	out := *in
	if in.Job != nil {
		j := *in.Job
		set(&j)
		out.Job = &j
	}
	out.Jobs = slices.Clone(in.Jobs)
	for i := range out.Jobs {
		set(&out.Jobs[i])
	}
	return &out
}
