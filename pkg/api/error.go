package api

// Error is the error object the enqueue and admin functions answer with,
// inside {"error": …}, when a request cannot be done as asked: bad input,
// or a queue or job that does not exist. The function wrote nothing, and
// the same request gets the same answer. Other failures (DynamoDB or SQS
// unavailable) are function errors instead, which callers may retry.
type Error struct {
	// Code is stable and snake_case (the Code constants).
	Code string `json:"code"`
	// Field is the full path of the value at fault, such as "queue",
	// "config.interval" or "jobs[3].payload"; empty if none is.
	Field string `json:"field,omitempty"`
	// Message says what is wrong, for people.
	Message string `json:"message"`
}

// The codes of Error. Codes are never renamed; new ones may come.
const (
	// The request as a whole.
	CodeMalformedJSON  = "malformed_json"
	CodeUnknownField   = "unknown_field"
	CodeDuplicateField = "duplicate_field"
	CodeInvalidType    = "invalid_type"
	CodeInvalidValue   = "invalid_value"
	CodeInvalidOp      = "invalid_op"
	CodeInvalidRequest = "invalid_request"
	CodeMissingConfig  = "missing_config"
	// CodeUnusedField: a field the operation does not read (an admin
	// op given another op's field), refused rather than ignored.
	CodeUnusedField = "unused_field"

	// Queues and their settings.
	CodeInvalidQueue         = "invalid_queue"
	CodeInvalidDuration      = "invalid_duration"
	CodeInvalidInterval      = "invalid_interval"
	CodeInvalidRate          = "invalid_rate"
	CodeInvalidBurst         = "invalid_burst"
	CodeInvalidWindow        = "invalid_window"
	CodeTooManyLimits        = "too_many_limits"
	CodeInvalidSkew          = "invalid_skew"
	CodeInvalidMaxAttempts   = "invalid_max_attempts"
	CodeInvalidBackoff       = "invalid_backoff"
	CodeInvalidRetention     = "invalid_retention"
	CodeInvalidTargetTimeout = "invalid_target_timeout"
	// CodeInvalidMaxSlowDowns and CodeInvalidRetryAfterDefault: a
	// queue's max_slow_downs or retry_after_default is out of range.
	CodeInvalidMaxSlowDowns      = "invalid_max_slow_downs"
	CodeInvalidRetryAfterDefault = "invalid_retry_after_default"
	// CodeInvalidBookAhead: a queue's book_ahead or key_book_ahead is
	// out of range (1 to MaxBookAhead, or left out).
	CodeInvalidBookAhead = "invalid_book_ahead"
	// CodeInvalidBatch: a queue's batch_max or batch_wait is out of
	// range, or batch_max beside settings batches do not take (key
	// limits, the waiting room's bounds), or a job with a key on a
	// queue that starts its jobs in batches.
	CodeInvalidBatch = "invalid_batch"
	// CodeInvalidDebounce: a job's debounce_key without a debounce (or
	// the other way round), or a debounce out of range (more than 0, at
	// most MaxDebounce); CodeDebounceNotAllowed: a debounced job for a
	// queue with a waiting room (book_ahead, key_book_ahead).
	CodeInvalidDebounce    = "invalid_debounce"
	CodeDebounceNotAllowed = "debounce_not_allowed"
	CodeInvalidMaxRunning  = "invalid_max_running"
	// CodeInvalidKeyMaxRunning: a key_max_running out of range (keyed
	// limits).
	CodeInvalidKeyMaxRunning = "invalid_key_max_running"
	CodeInvalidNetwork       = "invalid_network"
	CodeTooManyTargets       = "too_many_targets"
	CodeTooManyNetworks      = "too_many_networks"
	CodeInvalidTime          = "invalid_time"
	CodeInvalidUntil         = "invalid_until"
	CodeInvalidSince         = "invalid_since"

	// Jobs.
	CodeNoJobs      = "no_jobs"
	CodeTooManyJobs = "too_many_jobs"
	CodeInvalidID   = "invalid_id"
	CodeDuplicateID = "duplicate_id"
	// CodeReservedID: a job id of a schedule's occurrence's form
	// (NAME:TIME), which only schedules make.
	CodeReservedID       = "reserved_id"
	CodeNoTarget         = "no_target"
	CodeInvalidTarget    = "invalid_target"
	CodeInvalidKind      = "invalid_kind"
	CodeUnknownKind      = "unknown_kind"
	CodeInvalidKey       = "invalid_key"
	CodePayloadTooLarge  = "payload_too_large"
	CodeInvalidNotBefore = "invalid_not_before"
	// A job's traceparent or tracestate is not in W3C Trace Context's
	// form (Spec.TraceParent).
	CodeInvalidTraceParent = "invalid_traceparent"
	CodeInvalidTraceState  = "invalid_tracestate"
	// CodeInvalidPriority: a job's priority is outside MinPriority to
	// MaxPriority.
	CodeInvalidPriority   = "invalid_priority"
	CodeTargetNotAllowed  = "target_not_allowed"
	CodeInvalidStatus     = "invalid_status"
	CodeStatusNotListed   = "status_not_listed"
	CodeInvalidAfter      = "invalid_after"
	CodeInvalidLimit      = "invalid_limit"
	CodeInvalidUpTo       = "invalid_up_to"
	CodeInvalidBy         = "invalid_by"
	CodeInvalidRetry      = "invalid_retry"
	CodeInvalidRedrive    = "invalid_redrive"
	CodeNoDeadLetterQueue = "no_dead_letter_queue"
	// Keys' own limits (set_key_limits): no keys, more than
	// MaxKeyOverrides, a key given twice, a key without limits (a list,
	// or null to clear), a queue without key_limits.
	CodeInvalidKeys   = "invalid_keys"
	CodeTooManyKeys   = "too_many_keys"
	CodeDuplicateKey  = "duplicate_key"
	CodeMissingLimits = "missing_limits"
	CodeNotKeyed      = "not_keyed"
	// CodeInvalidWeight: a key's weight is outside 1 to MaxWeight.
	CodeInvalidWeight = "invalid_weight"
	// CodeInvalidWait is the client's own: EnqueueAndWait given a batch.
	CodeInvalidWait = "invalid_wait"

	// Schedules.
	CodeInvalidScheduleName = "invalid_schedule_name"
	CodeMissingSchedule     = "missing_schedule"
	CodeNoRule              = "no_rule"
	// The CLI's own: slotq enqueue --count out of its range, and a line
	// of --from that is no JSON job.
	CodeInvalidCount   = "invalid_count"
	CodeInvalidJSON    = "invalid_json"
	CodeInvalidRule    = "invalid_rule"
	CodeInvalidEvery   = "invalid_every"
	CodeInvalidCron    = "invalid_cron"
	CodeInvalidTZ      = "invalid_tz"
	CodeUnknownTZ      = "unknown_tz"
	CodeInvalidStart   = "invalid_start"
	CodeInvalidEnd     = "invalid_end"
	CodeInvalidMissed  = "invalid_missed"
	CodeNeverFires     = "never_fires"
	CodeScheduleExists = "schedule_exists"
	// CodeScheduleTooFast: a schedule that makes jobs faster than its
	// queue's limit (or its key's) starts them.
	CodeScheduleTooFast  = "schedule_too_fast"
	CodeScheduleNotFound = "schedule_not_found"
	CodeNoSchedules      = "no_schedules"

	// What the request names.
	CodeQueueNotFound = "queue_not_found"
	CodeQueueExists   = "queue_exists"
	CodeJobNotFound   = "job_not_found"
	CodeNotWaiting    = "not_waiting"
	CodeNotRetryable  = "not_retryable"
)
