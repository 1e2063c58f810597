package costs

import "github.com/slotq/slotq/internal/bench/costs/pricelist"

// prices are the per-unit prices the cost table uses (pricelist.List,
// the one place they are written).
var prices = pricelist.List

// Alternative is a managed scheduler's published price per million jobs.
type Alternative struct {
	Name, Unit string
	PerMillion float64
	Note       string
}

// alternatives are written with the same date as prices.
var alternatives = []Alternative{
	{"EventBridge Scheduler", "scheduled invocations", prices.SchedulerMillion,
		"one-time schedules; first 14 M/month free; no spacing between jobs"},
	{"Step Functions Standard", "state transitions", 25.00,
		"a Wait + Task workflow is ~3 transitions per job: ~$75 per million jobs, plus the task's own cost"},
	{"Google Cloud Tasks", "billable operations", 0.40,
		"first million per month free; rate limits per queue (max dispatches per second)"},
}
