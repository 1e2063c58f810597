package precision_test

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/slotq/slotq/internal/bench/costs/pricelist"
	"github.com/slotq/slotq/internal/bench/precision"
)

// Without any delay on the way every start is kept, at its slot: the
// model loses nothing of its own.
func TestNoDelayNoMiss(t *testing.T) {
	r := precision.Model{Lead: 50 * time.Millisecond, Skew: 10 * time.Millisecond}.Run(10000, 1)
	if r.Missed != 0 || r.LateP99 != 0 {
		t.Errorf("missed %d, p99 %v; want none and 0", r.Missed, r.LateP99)
	}
}

// SQS's whole seconds alone cost nothing: a message arrives up to a
// second early, and the worker waits, however small the lead.
func TestRoundingAloneIsEarly(t *testing.T) {
	m := precision.Model{Lead: 0, Skew: 10 * time.Millisecond, Gate: precision.DynamoDBCall}
	// The gate's calls come after the arrival: with no lead they may make
	// a start late, never the rounding.
	r := m.Run(10000, 1)
	m.Gate = precision.Dist{}
	if r0 := m.Run(10000, 1); r0.Missed != 0 {
		t.Errorf("rounding alone missed %d starts", r0.Missed)
	}
	if r.Wait < 400*time.Millisecond {
		t.Errorf("mean wait %v: a message rounded down arrives half a second early on average", r.Wait)
	}
}

// A longer lead never misses more, and a lead longer than the longest
// way misses nothing.
func TestLeadMonotone(t *testing.T) {
	for _, sc := range precision.Scenarios {
		prev := 1.0
		for _, lead := range precision.Leads {
			share := sc.Model(lead, 10*time.Millisecond).Run(20000, 7).MissedShare()
			if share > prev {
				t.Errorf("%s: lead %v misses %.4f, more than a shorter lead's %.4f", sc.Name, lead, share, prev)
			}
			prev = share
		}
	}
	bounded := precision.Model{Lead: 900 * time.Millisecond, Skew: 10 * time.Millisecond,
		Pickup: precision.Dist{Median: 100 * time.Millisecond}, ColdShare: 1, Cold: precision.Dist{Median: 300 * time.Millisecond},
		Gate: precision.Dist{Median: 15 * time.Millisecond}, Wake: precision.Dist{Median: 5 * time.Millisecond}}
	if r := bounded.Run(10000, 3); r.Missed != 0 {
		t.Errorf("a lead longer than every delay missed %d starts", r.Missed)
	}
}

// TestTable: the table docs/performance.md holds (cmd/precision prints
// it, make bench writes it there) has a column per lead and a row per
// scenario, each cell a share and a wait, and the same runs make the same
// table: it is seeded, so every host prints the doc's.
func TestTable(t *testing.T) {
	table := precision.Table(2000, 10*time.Millisecond)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 2+len(precision.Scenarios) {
		t.Fatalf("%d lines, want a header, its rule and %d scenarios:\n%s", len(lines), len(precision.Scenarios), table)
	}
	cell := regexp.MustCompile(`^\d+\.\d\d% \(\d+\.\d\d s\)$`)
	if n := strings.Count(lines[1], "---"); n != 1+len(precision.Leads) {
		t.Errorf("the header's rule %q has %d columns, want %d", lines[1], n, 1+len(precision.Leads))
	}
	for i, line := range lines {
		if i == 1 {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 1+len(precision.Leads) {
			t.Errorf("line %d has %d cells, want a name and %d leads: %q", i, len(cells), len(precision.Leads), line)
			continue
		}
		if i == 0 {
			continue
		}
		if sc := precision.Scenarios[i-2]; cells[0] != sc.Name {
			t.Errorf("row %d is %q, want scenario %q", i-2, cells[0], sc.Name)
		}
		for _, c := range cells[1:] {
			if !cell.MatchString(c) {
				t.Errorf("%s: cell %q is not a share and a wait", cells[0], c)
			}
		}
	}
	if again := precision.Table(2000, 10*time.Millisecond); again != table {
		t.Errorf("two runs of the same table differ:\n%s\n%s", table, again)
	}
}

// The stack's SlotLead (template.yaml) keeps the model's give-ups under
// 1 % of starts — the re-tickets slotq allows itself — wherever the
// worker runs, except a quiet stack with the ADOT layer, whose every start
// waits for two inits (docs/guarantees.md says what to do there).
func TestStackLeadFromModel(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Parameters map[string]struct {
			Default string `yaml:"Default"`
		} `yaml:"Parameters"`
	}
	if err := yaml.Unmarshal(b, &tmpl); err != nil {
		t.Fatal(err)
	}
	lead, err := time.ParseDuration(tmpl.Parameters["SlotLead"].Default)
	if err != nil {
		t.Fatalf("SlotLead's default: %v", err)
	}
	skew, err := time.ParseDuration(tmpl.Parameters["DefaultSkew"].Default)
	if err != nil {
		t.Fatalf("DefaultSkew's default: %v", err)
	}
	for _, sc := range precision.Scenarios {
		share := sc.Model(lead, skew).Run(100000, 11).MissedShare()
		if sc.ColdShare == 1 && sc.Cold == precision.ColdGoADOT {
			t.Logf("%s: %.2f%% of starts given up at lead %v", sc.Name, 100*share, lead)
			continue
		}
		if share > 0.01 {
			t.Errorf("%s: SlotLead %v gives up %.2f%% of starts, more than 1%%", sc.Name, lead, 100*share)
		}
	}
}

// A batching window delays a message up to the window after it became
// visible: sent only a lead ahead, a quiet queue's starts are missed
// (most of them at 5 s); sent the window earlier as well, they are kept
// as without a window, and the worker sleeps longer: the jobs a batch
// holds for its last one wait for it.
func TestWindowNeedsSendingEarly(t *testing.T) {
	skew := 10 * time.Millisecond
	base := precision.WindowModel(1, 0, false, skew).Run(20000, 5)
	if share := base.MissedShare(); share > 0.01 {
		t.Fatalf("no window at 1 job/s: %.2f%% missed, want under 1%%", 100*share)
	}
	for _, w := range []time.Duration{time.Second, 5 * time.Second} {
		late := precision.WindowModel(1, w, false, skew).Run(20000, 5)
		early := precision.WindowModel(1, w, true, skew).Run(20000, 5)
		if share := late.MissedShare(); share < 0.4 {
			t.Errorf("window %v, sent a lead ahead: %.2f%% missed; the window's wait is more than the lead", w, 100*share)
		}
		if share := early.MissedShare(); share > base.MissedShare()+0.005 {
			t.Errorf("window %v, sent lead + window ahead: %.2f%% missed, want about the %.2f%% without a window", w, 100*share, 100*base.MissedShare())
		}
		if early.Wait < base.Wait+w/5 {
			t.Errorf("window %v sent early: mean wait %v, want the %v without a window and a share of the window", w, early.Wait, base.Wait)
		}
	}
	if share := precision.WindowModel(1, 5*time.Second, false, skew).Run(20000, 5).MissedShare(); share < 0.5 {
		t.Errorf("window 5s at lead %v: %.2f%% missed, want most", precision.WindowLead, 100*share)
	}
}

// One invocation serves the jobs a batch gathered: without a window only
// those one receive finds together (one a second: nearly one each; at
// 100/s a few), with one the batch fills at a busy rate, and the worker's cost
// per job falls with the invocations and the receives.
func TestWindowBatchesJobs(t *testing.T) {
	skew := 10 * time.Millisecond
	if n := precision.WindowModel(1, 0, false, skew).Run(5000, 2).JobsPerInvocation(); n > 1.05 {
		t.Errorf("1 job/s, no window: %.3f jobs per invocation, want about 1", n)
	}
	if n := precision.WindowModel(100, 0, false, skew).Run(20000, 2).JobsPerInvocation(); n <= 1.5 || n >= 4 {
		t.Errorf("100 jobs/s, no window: %.2f jobs per invocation, want those of a receive's %v: 1.5 to 4", n, precision.ReceiveGather)
	}
	if n := precision.WindowModel(1, 5*time.Second, true, skew).Run(5000, 2).JobsPerInvocation(); n < 4.5 || n > 6.5 {
		t.Errorf("1 job/s, window 5s: %.2f jobs per invocation, want about 5", n)
	}
	for _, w := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second} {
		for _, early := range []bool{false, true} {
			if n := precision.WindowModel(100, w, early, skew).Run(20000, 2).JobsPerInvocation(); n < 9.5 {
				t.Errorf("100 jobs/s, window %v, early %v: %.2f jobs per invocation, want nearly %d", w, early, n, precision.BatchSize)
			}
		}
	}
	alone := precision.WindowModel(10, 0, false, skew).Run(20000, 2).WorkerCost()
	batched := precision.WindowModel(10, time.Second, true, skew).Run(20000, 2).WorkerCost()
	if batched > alone/2 {
		t.Errorf("10 jobs/s: the worker costs $%.2f per million jobs with a 1 s window sent early, $%.2f without: want under half", batched, alone)
	}
}

// WorkerCost prices an invocation, one receive and one delete, and the
// billed duration at 128 MB, with the price list the cost report uses
// (internal/bench/costs/pricelist).
func TestWorkerCostPrices(t *testing.T) {
	p := pricelist.List
	perInvocation := precision.Result{Jobs: 1000, Invocations: 1000}.WorkerCost()
	if want := p.LambdaMillion + 2*p.SQSMillion; math.Abs(perInvocation-want) > 1e-9 {
		t.Errorf("a job an invocation, nothing billed: $%.4f per million, want $%.4f (an invocation, a receive, a delete)", perInvocation, want)
	}
	perSecond := precision.Result{Jobs: 1000, Billed: 1000 * time.Second}.WorkerCost()
	if want := 128.0 / 1024 * p.LambdaGBSecond * 1e6; math.Abs(perSecond-want) > 1e-9 {
		t.Errorf("a billed second a job, no invocation: $%.4f per million, want $%.4f", perSecond, want)
	}
}

// TestWindowTable: the window's table (cmd/precision -table window) has a
// row per rate and window, sent a lead ahead and, with a window, a lead
// and the window ahead; it is seeded like the lead's.
func TestWindowTable(t *testing.T) {
	table := precision.WindowTable(1000, 10*time.Millisecond)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	rows := len(precision.Rates) * (2*len(precision.Windows) - 1)
	if len(lines) != 2+rows {
		t.Fatalf("%d lines, want a header, its rule and %d rows:\n%s", len(lines), rows, table)
	}
	cells := regexp.MustCompile(`^\| [0-9.]+ \| \S+ \| \S+ \| \d+\.\d\d% \| \S+ \| \S+ \| \d+\.\d\d \| \d+\.\d{3} \| \d+\.\d\d \|$`)
	for _, line := range lines[2:] {
		if !cells.MatchString(line) {
			t.Errorf("row %q is not a rate, a window, a send, a share, two latenesses, jobs per invocation, seconds and dollars", line)
		}
	}
	if again := precision.WindowTable(1000, 10*time.Millisecond); again != table {
		t.Errorf("two runs of the same table differ:\n%s\n%s", table, again)
	}
}
