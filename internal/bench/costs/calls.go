package costs

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/slotq/slotq/internal/dev/awsmeter"
)

// roles are the functions in the order the calls table shows them.
var roles = []string{"enqueue", "worker", "resume", "admin"}

// roleCalls is one function's DynamoDB calls in a scenario, by operation
// and item ("PutItem job").
type roleCalls map[string]awsmeter.Count

// reportCalls writes, per scenario, each function's DynamoDB calls per
// job: what the units of the first table are made of, so that
// docs/costs.md can say why a job pays for each from figures that
// `slotq costs` wrote.
func reportCalls(w io.Writer, results []result) {
	fmt.Fprintln(w, "\n### DynamoDB calls per job, by function (operation and item; failed conditions in brackets)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | enqueue | worker | resume | admin |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, r := range results {
		cells := []string{fmt.Sprintf("(%s)", r.sc.name)}
		for _, role := range roles {
			cells = append(cells, callsCell(r.calls[role], r.n))
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

// callsCell lists a function's calls per job (of n jobs), operations in
// name order; "–" when it made none.
func callsCell(c roleCalls, n int) string {
	if len(c) == 0 || n == 0 {
		return "–"
	}
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(c)) {
		s := fmt.Sprintf("%s %.2f", op, float64(c[op].Calls)/float64(n))
		if c[op].CondFailed > 0 {
			s += fmt.Sprintf(" [%.2f]", float64(c[op].CondFailed)/float64(n))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
