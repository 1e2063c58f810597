package dynamostore_test

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/awsmeter"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// TestStaleForms holds StaleTake and StaleGate, which a model of the store
// bills by, to what the store does on DynamoDB: through a random walk of
// takes and gates whose hint (Seen) is sometimes the state, sometimes an
// older one, a call that landed was refused first exactly when they say
// so. Both kinds of call and both answers must come up, or the walk
// proves nothing.
func TestStaleForms(t *testing.T) {
	client := newClient(t, nil)
	m := awsmeter.NewDynamoDB(client)
	st := dynamostore.New(m, newTable(t, client), dynamostore.Options{})
	ctx := t.Context()
	// A rate with a burst: its gate is busy or idle as starts come.
	cfg := slot.Config{Rate: api.Rate{N: 4, Per: time.Second}, Burst: 3}.WithDefaults()
	if err := st.CreateQueue(ctx, engine.Queue{Name: "walk", Config: cfg, CreatedAt: base}); err != nil {
		t.Fatal(err)
	}
	ls := cfg.LimitList()
	rng := rand.New(rand.NewPCG(3, 4))
	var model slot.State
	var history []slot.State // states the walk went through: stale hints
	now := base
	seenStale := map[string][2]int{} // "take"/"gate" → [said stale, said fresh]
	hint := func() slot.State {
		if len(history) > 0 && rng.IntN(2) == 0 {
			return history[rng.IntN(len(history))]
		}
		return model
	}
	refused := func(call func() error) (int64, error) {
		before := m.Total().CondFailed
		err := call()
		return m.Total().CondFailed - before, err
	}
	check := func(what string, said bool, n int64, i int) {
		t.Helper()
		if (n > 0) != said {
			t.Fatalf("step %d: %s refused %d times before it landed; Stale%s said %v", i, what, n, what, said)
		}
		c := seenStale[what]
		if said {
			c[0]++
		} else {
			c[1]++
		}
		seenStale[what] = c
	}
	for i := range 200 {
		now = now.Add(time.Duration(rng.IntN(300_000_000)))
		history = append(history, model)
		if rng.IntN(2) == 0 && model.Ticket > model.Current {
			ticket := model.Current + 1 + rng.Int64N(model.Ticket-model.Current)
			r := engine.GateRequest{Queue: "walk", Ticket: ticket, Limits: ls, Skew: cfg.Skew, Now: now, Seen: hint(), Scheduled: rng.IntN(2) == 0}
			if v, _ := r.Decide(model); v != slot.Start {
				continue
			}
			said := dynamostore.StaleGate(r, model)
			n, err := refused(func() error {
				got, err := st.Gate(ctx, r)
				model = got
				return err
			})
			var ge *engine.GateError
			if errors.As(err, &ge) {
				t.Fatalf("step %d: gate refused (%s) although it lets the ticket through on the state", i, ge.Verdict)
			}
			if err != nil {
				t.Fatal(err)
			}
			check("gate", said, n, i)
			continue
		}
		n := 1 + rng.IntN(3)
		r := engine.TakeRequest{Queue: "walk", N: n, Line: n, Limits: ls, Skew: cfg.Skew, Now: now, Seen: hint()}
		said := dynamostore.StaleTake(r, model)
		c, err := refused(func() error {
			tk, err := st.Take(ctx, r)
			model = tk.State
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		check("take", said, c, i)
	}
	t.Logf("stale or fresh, by kind: %v", seenStale)
	for _, what := range []string{"take", "gate"} {
		if c := seenStale[what]; c[0] == 0 || c[1] == 0 {
			t.Errorf("%s: %d calls said stale, %d fresh: the walk must see both", what, c[0], c[1])
		}
	}
}
