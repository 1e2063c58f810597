package metrics

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/slotq/slotq/internal/engine"
)

// events is every event slotq names, each once, by its one name: a job's
// history's where the history records it (api.EventKind: on the wire and
// in stored records, so it stays), and the metric that counts it, if one
// does (a count's name, also on the wire: CloudWatch's).
var events = []struct {
	name    string
	history bool // a job's history records it (pkg/api/job.go)
	engine  bool // the engine reports it to its Observer (internal/engine/observe.go)
	metric  string
}{
	{"enqueued", true, false, ""},
	{"parked", true, true, Parks},
	{"released", true, true, Released},
	{"reticketed", true, true, Reticketed},
	{"slot_missed", true, true, MissedSlots},
	{"handed_back", true, true, HandedBack},
	{"started", true, true, Starts},
	{"attempt_failed", true, true, AttemptFailures},
	{"retried", true, true, Retries},
	{"rerun", true, false, ""},
	{"succeeded", true, true, Succeeded},
	{"failed", true, true, DeadLetters},
	{"cancelled", true, false, ""},
	{"slowed_down", true, true, SlowDowns},
	{"booked", true, true, ""},
	{"key_held", false, true, ""},
	{"lifted", false, true, PausesLifted},
	{"figures", false, true, ""},
}

// TestOneNamePerEvent holds the engine's events and a job's history's to
// one vocabulary: each event has one name, the same in both, and its
// constants are named for it (Event + the name in Go's case on the
// engine's side; the name, or the name + Event, on the history's). A
// second name for an event (the engine's "hand_back" beside the
// history's "handed_back") fails here: an event new to either list is
// added to events, under the name the other list already gives it.
func TestOneNamePerEvent(t *testing.T) {
	engineKinds := constsOf(t, filepath.Join("..", "engine", "observe.go"))
	historyKinds := constsOf(t, filepath.Join("..", "..", "pkg", "api", "job.go"))
	if len(engineKinds) < 10 || len(historyKinds) < 10 {
		t.Fatalf("read %d engine kinds and %d history kinds", len(engineKinds), len(historyKinds))
	}
	known := map[string]bool{}
	for _, ev := range events {
		if known[ev.name] {
			t.Errorf("%s is listed twice", ev.name)
		}
		known[ev.name] = true
		for _, side := range []struct {
			listed bool
			consts map[string]string
			where  string
			named  func(string) []string
		}{
			{ev.engine, engineKinds, "internal/engine's EventKind", func(n string) []string { return []string{"Event" + goName(n)} }},
			{ev.history, historyKinds, "pkg/api's EventKind", func(n string) []string { return []string{goName(n), goName(n) + "Event"} }},
		} {
			c, ok := constNamed(side.consts, ev.name)
			switch {
			case side.listed && !ok:
				t.Errorf("%s: no constant of %s has this name", ev.name, side.where)
			case !side.listed && ok:
				t.Errorf("%s: %s has it (%s); mark it in events", ev.name, side.where, c)
			case ok && !slices.Contains(side.named(ev.name), c):
				t.Errorf("%s is %s in Go; want %s", ev.name, c, strings.Join(side.named(ev.name), " or "))
			}
		}
		if ev.engine && counters[engine.EventKind(ev.name)] != ev.metric {
			t.Errorf("%s: counted as %q, listed as %q", ev.name, counters[engine.EventKind(ev.name)], ev.metric)
		}
	}
	for _, consts := range []map[string]string{engineKinds, historyKinds} {
		for c, v := range consts {
			if !known[v] {
				t.Errorf("%s (%q) is no event of the list: if it is one of them, give it that event's name; else add it", c, v)
			}
		}
	}
}

// constsOf reads the file's constants of type EventKind: name → value.
func constsOf(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Values) != 1 {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "EventKind" {
			return true
		}
		if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
			v, _ := strconv.Unquote(lit.Value)
			out[vs.Names[0].Name] = v
		}
		return true
	})
	return out
}

// constNamed is the constant of consts whose value is name.
func constNamed(consts map[string]string, name string) (string, bool) {
	for c, v := range consts {
		if v == name {
			return c, true
		}
	}
	return "", false
}

// goName is name in Go's case: slot_missed → SlotMissed.
func goName(name string) string {
	var b strings.Builder
	for w := range strings.SplitSeq(name, "_") {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}
