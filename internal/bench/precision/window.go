package precision

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/slotq/slotq/internal/bench/costs/pricelist"
)

// The event source's batching window, for one queue at a rate
// (Model.Rate > 0). A job a slot, at the queue's interval; each message
// becomes visible its send ahead (Lead, or Lead + Window with SendEarly)
// before its slot, less SQS's lost fraction of a second, as in Run. Then:
//
//   - The event source gathers a batch from its first visible message: it
//     closes when Window has passed since that message became visible, or
//     at its BatchSize-th message, whichever comes first (messages are
//     small: the 6 MB limit never closes one). With no window it takes the
//     messages that became visible within Gather of the first (a
//     receive's own turn), and closes at once.
//   - The worker is invoked Pickup after the close (plus an init for
//     ColdShare of the invocations) and works the batch as
//     sqstransport.WorkBatch does: in slot order, each job at the gate a
//     Lead before its slot or once the job before it passed, sleeping to
//     its slot, its target running Target after its start.
//   - The invocation lasts until its last target ends (or its last job
//     given up): its billed duration.
//
// One poller gathers every batch: AWS runs at least five, which may split
// a quiet queue's messages into smaller batches, so the jobs per
// invocation are the most a window gives. The event source's documented
// wait of up to 20 s on a queue with very low traffic whatever the
// window (docs/performance.md, Batching window) is not modelled: it has
// no published threshold. No job is handed back: every slot here fits
// the worker's timeout.

// BatchSize is the most messages one invocation gets: the stack's
// BatchSize (template.yaml), SQS's most without a window.
const BatchSize = 10

// workerGB is the worker's memory: 128 MB (template.yaml's Globals).
const workerGB = 128.0 / 1024

var (
	// ReceiveGather: a poller's receive returns the messages that became
	// visible while it ran. No figure is published; the model takes an
	// in-region ReceiveMessage round trip, 20 ms.
	ReceiveGather = 20 * time.Millisecond
	// TargetRun is the target's run the window's table takes for every
	// job, a small constant (20 ms), so that its cells compare windows,
	// not targets.
	TargetRun = 20 * time.Millisecond
	// WindowLead is the window table's lead: the stack's SlotLead.
	WindowLead = 500 * time.Millisecond
	// Rates (jobs a second of one queue) and Windows are the window
	// table's rows.
	Rates   = []float64{1, 10, 100}
	Windows = []time.Duration{0, time.Second, 2 * time.Second, 5 * time.Second}
)

type message struct{ slot, visible time.Duration }

func (m Model) runBatched(jobs int, seed uint64) Result {
	r := rand.New(rand.NewPCG(seed, seed^0xb47c))
	interval := time.Duration(float64(time.Second) / m.Rate)
	ahead := m.Lead
	if m.SendEarly {
		ahead += m.Window
	}
	msgs := make([]message, jobs)
	for i := range msgs {
		slot := time.Duration(i) * interval
		msgs[i] = message{slot, slot - ahead - time.Duration(r.Float64()*float64(time.Second))}
	}
	slices.SortFunc(msgs, func(a, b message) int { return cmp.Compare(a.visible, b.visible) })

	res := Result{Jobs: jobs}
	late := make([]time.Duration, 0, jobs)
	var wait time.Duration
	batch := make([]message, 0, BatchSize)
	for i := 0; i < len(msgs); {
		first := msgs[i].visible
		closes := first + m.Window
		reach := max(closes, first+m.Gather)
		batch = batch[:0]
		for ; i < len(msgs) && len(batch) < BatchSize && msgs[i].visible <= reach; i++ {
			batch = append(batch, msgs[i])
		}
		if len(batch) == BatchSize {
			closes = min(closes, batch[BatchSize-1].visible)
		}
		closes = max(closes, batch[len(batch)-1].visible)

		invoked := closes + m.Pickup.sample(r)
		ready := invoked
		if r.Float64() < m.ColdShare {
			ready += m.Cold.sample(r)
		}
		res.Invocations++
		slices.SortFunc(batch, func(a, b message) int { return cmp.Compare(a.slot, b.slot) })
		gate, end := ready, ready
		for _, j := range batch {
			gate = max(gate, j.slot-m.Lead)
			for range 3 {
				gate += m.Gate.sample(r)
			}
			start := max(gate, j.slot) + m.Wake.sample(r)
			wait += max(0, start-ready)
			if start-j.slot > m.Skew {
				res.Missed++
				end = max(end, gate)
				continue
			}
			end = max(end, start+m.Target)
			late = append(late, max(0, start-j.slot))
		}
		res.Billed += billed(end - invoked)
	}
	res.LateP50, res.LateP99 = percentiles(late)
	res.Wait = wait / time.Duration(jobs)
	return res
}

// JobsPerInvocation is the mean number of jobs one worker invocation ran.
func (r Result) JobsPerInvocation() float64 { return float64(r.Jobs) / float64(r.Invocations) }

// BilledPerJob is the worker's billed duration per job.
func (r Result) BilledPerJob() time.Duration { return r.Billed / time.Duration(r.Jobs) }

// WorkerCost is the worker's cost per million jobs in USD: its
// invocations, one SQS receive and one delete per invocation (the event
// source deletes a batch's messages in one call), and its billed duration
// at 128 MB on arm64. The enqueue's and the gate's DynamoDB units are
// the same at every window and left out.
func (r Result) WorkerCost() float64 {
	p := pricelist.List
	perInvocation := p.LambdaMillion + 2*p.SQSMillion
	return float64(r.Invocations)/float64(r.Jobs)*perInvocation +
		r.BilledPerJob().Seconds()*workerGB*p.LambdaGBSecond*1e6
}

// WindowModel is the model of one queue at rate jobs a second behind an
// event source with window, at WindowLead and skew, its messages sent
// WindowLead + window ahead if early: a busy queue's (1 % of invocations
// cold), with the published figures.
func WindowModel(rate float64, window time.Duration, early bool, skew time.Duration) Model {
	m := Scenarios[1].Model(WindowLead, skew)
	m.Rate, m.Window, m.SendEarly = rate, window, early
	m.Gather, m.Target = ReceiveGather, TargetRun
	return m
}

// WindowTable runs WindowModel at every rate and window, sent a lead
// ahead and (with a window) a lead and the window ahead, jobs each, and
// writes the results as a Markdown table: what the window does to the
// starts and to what the worker costs.
func WindowTable(jobs int, skew time.Duration) string {
	out := "| jobs/s | window | sent ahead | starts missed | late p50 | late p99 | jobs per invocation | billed s per job | worker $ per M jobs |\n"
	out += "|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n"
	for _, rate := range Rates {
		for _, w := range Windows {
			for _, early := range []bool{false, true} {
				if early && w == 0 {
					continue
				}
				m := WindowModel(rate, w, early, skew)
				res := m.Run(jobs, 1)
				ahead := m.Lead
				if early {
					ahead += w
				}
				out += fmt.Sprintf("| %g | %v | %v | %.2f%% | %v | %v | %.2f | %.3f | %.2f |\n",
					rate, w, ahead, 100*res.MissedShare(), res.LateP50.Round(100*time.Microsecond),
					res.LateP99.Round(100*time.Microsecond), res.JobsPerInvocation(), res.BilledPerJob().Seconds(), res.WorkerCost())
			}
		}
	}
	return out
}
