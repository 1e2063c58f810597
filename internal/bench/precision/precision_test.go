package precision_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

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
