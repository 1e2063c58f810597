package metrics

// Units, as CloudWatch names them.
const (
	Count        = "Count"
	Milliseconds = "Milliseconds"
)

// The metrics slotq writes. For the whole stack (no dimension), and per
// queue only when Options.Dimension names a queue dimension; JobsRefused
// by Code alone: a refused request may name no valid queue.
const (
	// Worker: what happened to each queue's jobs.
	Starts          = "Starts"          // attempts started (passed the gate and claimed)
	StartLateness   = "StartLateness"   // ms, start − slot, one value per start
	StartGap        = "StartGap"        // ms, start − the previous start's theoretical time
	Succeeded       = "Succeeded"       // attempts that succeeded
	AttemptFailures = "AttemptFailures" // attempts that failed (retried or not)
	Retries         = "Retries"         // failed attempts given a new ticket
	DeadLetters     = "DeadLetters"     // jobs failed for good
	Reticketed      = "Reticketed"      // jobs that took a new ticket (worker: passed; resume: stale)
	Parks           = "Parks"           // jobs parked: at the gate (paused queue), or on a lane (key held, no running place)
	Released        = "Released"        // parked jobs sent to the transport (resume; a lane's hand-off)
	HandedBack      = "HandedBack"      // messages sent again unstarted (the slot lay past the invocation)
	MissedSlots     = "MissedSlots"     // jobs whose worker came too late for their start: they gave the slot up
	PausesLifted    = "PausesLifted"    // timed pauses resume lifted
	SlowDowns       = "SlowDowns"       // attempts a target answered "slow down" (429, RetryAfter): the queue or key waits
	// Worker, for a queue that starts its jobs in batches (batch_max)
	// only, so other queues add no custom metric: the jobs its starts
	// carried (BatchJobs/Starts is its jobs per start).
	BatchJobs = "BatchJobs"
	// Resume, once per queue per run, with engine.Options.Figures (the
	// functions turn it on with a queue dimension): the queue's figures.
	Waiting    = "Waiting"    // tickets not yet at the gate: queued + parked jobs (an upper bound)
	ParkedJobs = "ParkedJobs" // parked jobs (exact up to the resume budget; a lower bound above)
	Queued     = "Queued"     // Waiting − ParkedJobs: the line's queued jobs, an estimate
	Lag        = "Lag"        // ms, how far the queue's starts trail its line
	// Resume, for queues with lanes (docs/guarantees.md §12): written only for a
	// queue with max_running (Running) or with keys in use (the rest), so
	// queues without them add no custom metrics.
	Running         = "Running"         // attempts running under max_running
	KeysHeld        = "KeysHeld"        // keys a job holds
	KeysWaiting     = "KeysWaiting"     // keys with jobs parked on them
	WaitingOnKeys   = "WaitingOnKeys"   // jobs parked waiting for their key
	WaitingForPlace = "WaitingForPlace" // jobs parked waiting for a running place
	// Resume, per stack (one line a run, no queue).
	ResumeBacklog     = "ResumeBacklog"     // due entries a run read and left for the next (its time ran out)
	ReindexQueuesLeft = "ReindexQueuesLeft" // queues a rebuild of the records still has to do, while one is under way
	// Enqueue.
	JobsAccepted = "JobsAccepted" // new jobs accepted
	JobsRefused  = "JobsRefused"  // requests refused, by Code
)

// Metric describes one metric: its name, unit and the function that
// writes it.
type Metric struct {
	Name, Unit, Function string
}

// Metrics lists every metric slotq writes.
var Metrics = []Metric{
	{Starts, Count, "worker"},
	{StartLateness, Milliseconds, "worker"},
	{StartGap, Milliseconds, "worker"},
	{Succeeded, Count, "worker"},
	{AttemptFailures, Count, "worker"},
	{Retries, Count, "worker"},
	{DeadLetters, Count, "worker"},
	{Reticketed, Count, "worker, resume"},
	{Parks, Count, "worker"},
	{Released, Count, "worker, resume"},
	{HandedBack, Count, "worker"},
	{MissedSlots, Count, "worker"},
	{PausesLifted, Count, "resume"},
	{SlowDowns, Count, "worker"},
	{BatchJobs, Count, "worker"},
	{Waiting, Count, "resume"},
	{ParkedJobs, Count, "resume"},
	{Queued, Count, "resume"},
	{Lag, Milliseconds, "resume"},
	{Running, Count, "resume"},
	{KeysHeld, Count, "resume"},
	{KeysWaiting, Count, "resume"},
	{WaitingOnKeys, Count, "resume"},
	{WaitingForPlace, Count, "resume"},
	{ResumeBacklog, Count, "resume"},
	{ReindexQueuesLeft, Count, "resume"},
	{JobsAccepted, Count, "enqueue"},
	{JobsRefused, Count, "enqueue"},
}

// unit returns name's unit.
func unit(name string) string {
	for _, m := range Metrics {
		if m.Name == name {
			return m.Unit
		}
	}
	panic("metrics: unknown metric " + name)
}

// Defaults of Options.
const (
	DefaultNamespace = "slotq"
	// DefaultDimension is the queue dimension template.yaml's
	// MetricsDimension parameter names, and the one CloudWatch.Activity
	// reads when given none. Options.Dimension has no default.
	DefaultDimension = "Queue"
	// QueueProperty is the field of every queue's line that names it,
	// with or without a queue dimension.
	QueueProperty = "queue"
	// CodeDimension is JobsRefused's dimension: the refusal's code.
	CodeDimension = "Code"
)
