package local

import (
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// Stack holds the settings template.yaml gives the deployed stack, which
// the local runtime copies: the functions' timeouts, the slot queue's
// event source and redrive, the schedule, the default queue config.
type Stack struct {
	// Timeouts of the functions, by logical id.
	Timeouts map[string]time.Duration
	// BatchSize, BatchingWindow and ReportBatchItemFailures are the
	// worker's SQS event.
	BatchSize               int
	BatchingWindow          time.Duration
	ReportBatchItemFailures bool
	// VisibilityTimeout and MaxReceiveCount are SlotQueue's.
	VisibilityTimeout time.Duration
	MaxReceiveCount   int
	// ResumeEvery is the resume function's ScheduleV2 rate; ResumeInput
	// its Input; ResumeRetries its MaximumRetryAttempts.
	ResumeEvery   time.Duration
	ResumeInput   string
	ResumeRetries int
	// Defaults are DefaultInterval (or DefaultLimit, in its place when
	// set) and DefaultSkew.
	Defaults api.Config
	// Lead is SlotLead: how long before a start the stack's worker goes
	// to the gate.
	Lead time.Duration
}

// The functions' logical ids in template.yaml.
const (
	EnqueueFunction = "EnqueueFunction"
	WorkerFunction  = "WorkerFunction"
	ResumeFunction  = "ResumeFunction"
	AdminFunction   = "AdminFunction"
)

// StackDefaults returns template.yaml's settings (TestStackDefaults keeps
// them equal).
func StackDefaults() Stack {
	return Stack{
		Timeouts: map[string]time.Duration{
			EnqueueFunction: 15 * time.Second, WorkerFunction: 120 * time.Second,
			ResumeFunction: 60 * time.Second, AdminFunction: 60 * time.Second,
		},
		BatchSize: 10, BatchingWindow: 0, ReportBatchItemFailures: true,
		VisibilityTimeout: 720 * time.Second, MaxReceiveCount: 5,
		ResumeEvery: time.Minute, ResumeInput: `{"source":"slotq.schedule","action":"resume"}`, ResumeRetries: 2,
		Defaults: api.Config{Interval: time.Second, Skew: 10 * time.Millisecond},
		Lead:     500 * time.Millisecond,
	}
}
