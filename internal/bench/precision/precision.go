// Package precision models how close to its slot a job starts on AWS,
// where no emulator shows it: the path of one job's message from its
// send to its worker's start, with the delays AWS adds on the way, and a
// Monte Carlo run of it that says what share of starts a lead keeps and
// how late the kept ones begin. docs/guarantees.md and docs/performance.md
// quote its table, which `go run ./internal/bench/precision/cmd/precision`
// prints (make bench writes it into docs/performance.md); the stack's
// SlotLead is chosen from it.
//
// The path, for a job whose slot is s (all times relative to s):
//
//   - The enqueue (or the resume function's release) sends the message to
//     arrive a lead before s, but SQS delays by whole seconds and slotq
//     rounds down: the message becomes visible at −lead − u, u the
//     fraction of a second lost, uniform in [0, 1) for sends at any time.
//   - The event source's pollers receive it and invoke the worker: Pickup
//     later on a warm function; a share of invocations (ColdShare) also
//     waits for a new execution environment's init (Cold; with the ADOT
//     collector layer, its init too).
//   - The worker waits for −lead if it is early, then reads the queue,
//     passes the gate and claims the job (Gate: three DynamoDB calls),
//     sleeps to s and wakes Wake late.
//   - It calls its target only within the skew after s; later, it gives
//     the start up (the job takes a new ticket: a missed slot).
//
// That is precision.go: each job alone, in an invocation of its own.
// window.go runs one queue at a rate through the event source's batches
// and its batching window (Model.Rate, Model.Window): what the window does
// to the starts, the jobs per invocation and the worker's cost, the table
// `go run ./internal/bench/precision/cmd/precision -table window` prints.
//
// Where it sits: internal/bench, beside the other models; it runs no AWS
// call.
package precision

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Dist is a delay's distribution, log-normal through its median and its
// 99th percentile (the two figures the sources publish or that one
// measures); zero is no delay.
type Dist struct {
	Median, P99 time.Duration
}

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740408408

func (d Dist) sample(r *rand.Rand) time.Duration {
	if d.Median <= 0 {
		return 0
	}
	sigma := 0.0
	if d.P99 > d.Median {
		sigma = math.Log(float64(d.P99)/float64(d.Median)) / z99
	}
	return time.Duration(float64(d.Median) * math.Exp(sigma*r.NormFloat64()))
}

// Model is the AWS path of a job's start (the package comment).
type Model struct {
	// Lead is how long before its slot a job's message is sent to arrive
	// (SlotLead); Skew how late after its slot a worker may still start it.
	Lead, Skew time.Duration
	// Pickup is from a message's visibility to the warm worker's
	// invocation; Cold the init of a new execution environment, which
	// ColdShare of the invocations wait for.
	Pickup    Dist
	ColdShare float64
	Cold      Dist
	// Gate is one of the worker's three DynamoDB calls before a start;
	// Wake the timer's lateness after its sleep.
	Gate, Wake Dist

	// Rate, if more than 0, runs one queue of that many jobs a second, a
	// job a slot at the queue's interval, through the event source's
	// batches (window.go); 0 runs each job alone in an invocation of its
	// own, as the lead's table does.
	Rate float64
	// Window is the event source's MaximumBatchingWindowInSeconds (0, the
	// stack's, by default). SendEarly sends each message Lead + Window
	// before its slot instead of Lead, so that the window's wait comes out
	// of the message's margin rather than the job's start.
	Window    time.Duration
	SendEarly bool
	// Gather is how long after a batch's first message a receive still
	// finds messages that became visible with it, at any window; Target
	// is the target's run after a start, billed with the invocation.
	Gather, Target time.Duration
}

// Result is what a run of the model gave.
type Result struct {
	Jobs int
	// Missed counts the starts given up: the worker came later than the
	// skew after the slot.
	Missed int
	// LateP50 and LateP99 are the lateness of the starts kept.
	LateP50, LateP99 time.Duration
	// Wait is the mean time a worker waits for the slot once invoked,
	// billed as the function's duration.
	Wait time.Duration
	// Invocations is how many worker invocations ran the jobs; Billed
	// their duration summed, a cold start's init included: the sleeps to
	// the slots, the gate's calls and the targets' runs.
	Invocations int
	Billed      time.Duration
}

// MissedShare is the share of starts given up.
func (r Result) MissedShare() float64 { return float64(r.Missed) / float64(r.Jobs) }

// Run runs the model for jobs jobs from seed: the same arguments give the
// same result.
func (m Model) Run(jobs int, seed uint64) Result {
	if m.Rate > 0 {
		return m.runBatched(jobs, seed)
	}
	r := rand.New(rand.NewPCG(seed, seed^0x5107))
	res := Result{Jobs: jobs, Invocations: jobs}
	var late []time.Duration
	var wait time.Duration
	for range jobs {
		u := time.Duration(r.Float64() * float64(time.Second))
		recv := -m.Lead - u + m.Pickup.sample(r)
		var cold time.Duration
		if r.Float64() < m.ColdShare {
			cold = m.Cold.sample(r)
		}
		recv += cold
		done := max(recv, -m.Lead)
		for range 3 {
			done += m.Gate.sample(r)
		}
		start := max(done, 0) + m.Wake.sample(r)
		wait += max(0, start-recv)
		if start > m.Skew {
			res.Missed++
			res.Billed += billed(done - recv + cold)
			continue
		}
		res.Billed += billed(start + m.Target - recv + cold)
		late = append(late, max(0, start))
	}
	res.LateP50, res.LateP99 = percentiles(late)
	res.Wait = wait / time.Duration(jobs)
	return res
}

// percentiles are the median and the 99th percentile of late, which it
// sorts.
func percentiles(late []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(late)
	if n := len(late); n > 0 {
		return late[n/2], late[min(n-1, n*99/100)]
	}
	return 0, 0
}

// billed is an invocation's duration as Lambda bills it: rounded up to
// the millisecond.
func billed(d time.Duration) time.Duration {
	return max(0, d+time.Millisecond-1).Truncate(time.Millisecond)
}

// The published figures the model starts from. Each is a parameter: a
// team that measures its own (slotq queues starts, the REPORT lines'
// Init Duration) runs the model with those.
var (
	// Pickup: a message sent to SQS reached the next warm Lambda
	// invocation through the event source in about 125 ms, steadily, in a
	// chain of 500 events (github.com/lukehoban/lambdaperf); the send is a
	// part of that. Its tail is not published: 400 ms is this model's
	// assumption, 3–4 times the median.
	Pickup = Dist{Median: 100 * time.Millisecond, P99: 400 * time.Millisecond}
	// ColdGo: a Go function's init on provided.al2023 (about 100 ms at
	// 1 GB; aws-observability/aws-otel-lambda#228); slotq's functions have
	// 128 MB, a smaller share of a CPU, so the model doubles the tail.
	ColdGo = Dist{Median: 100 * time.Millisecond, P99: 300 * time.Millisecond}
	// ColdGoADOT: the same with the ADOT collector layer, which added
	// about 200 ms to that init (the same issue: 100 ms to 300 ms).
	ColdGoADOT = Dist{Median: 300 * time.Millisecond, P99: 600 * time.Millisecond}
	// DynamoDBCall: single-item reads and writes in-region answer in
	// single-digit milliseconds at the median and 10–15 ms at the p99
	// (docs/algorithm.md, the lead).
	DynamoDBCall = Dist{Median: 5 * time.Millisecond, P99: 15 * time.Millisecond}
	// WakeLambda: a Go timer wakes 0.6 ms late at the median and 1.1 ms
	// at the p99 on a quiet host (docs/algorithm.md, the skew); a Lambda
	// function's share of a CPU is smaller, and the model takes 4 ms at
	// the p99, inside the 10 ms the default skew allows for it.
	WakeLambda = Dist{Median: time.Millisecond, P99: 4 * time.Millisecond}
)

// Scenario is one line of the table: where the worker runs.
type Scenario struct {
	Name      string
	ColdShare float64
	Cold      Dist
}

// Scenarios are the table's lines: provisioned concurrency (no
// invocation waits for an init), a busy queue whose functions stay warm
// but sometimes scale out (1 % cold), and a quiet one whose every job
// finds no warm function (all cold), with and without the ADOT layer.
var Scenarios = []Scenario{
	{"provisioned concurrency", 0, Dist{}},
	{"busy, 1% cold", 0.01, ColdGo},
	{"busy, 1% cold, ADOT layer", 0.01, ColdGoADOT},
	{"quiet, every start cold", 1, ColdGo},
	{"quiet, every start cold, ADOT layer", 1, ColdGoADOT},
}

// Leads are the table's columns.
var Leads = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
	300 * time.Millisecond, 500 * time.Millisecond, 800 * time.Millisecond}

// Table runs every scenario at every lead, jobs each, with skew, and
// writes the results as a Markdown table: the share of starts given up,
// and the mean time a worker waits for its slot once invoked (what the
// lead costs: the worker's billed duration).
func Table(jobs int, skew time.Duration) string {
	out := "| where the worker runs | " + joinf(Leads, func(l time.Duration) string { return "lead " + l.String() }) + " |\n"
	out += "|---| " + joinf(Leads, func(time.Duration) string { return "---" }) + " |\n"
	for _, sc := range Scenarios {
		out += "| " + sc.Name + " | "
		out += joinf(Leads, func(l time.Duration) string {
			r := sc.Model(l, skew).Run(jobs, 1)
			return fmt.Sprintf("%.2f%% (%.2f s)", 100*r.MissedShare(), r.Wait.Seconds())
		})
		out += " |\n"
	}
	return out
}

// Model is the scenario's model at lead and skew, with the published
// figures.
func (sc Scenario) Model(lead, skew time.Duration) Model {
	return Model{Lead: lead, Skew: skew, Pickup: Pickup, ColdShare: sc.ColdShare, Cold: sc.Cold,
		Gate: DynamoDBCall, Wake: WakeLambda}
}

func joinf[T any](xs []T, f func(T) string) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += " | "
		}
		s += f(x)
	}
	return s
}
