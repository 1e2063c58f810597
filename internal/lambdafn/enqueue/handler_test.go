package enqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/sample"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

func event(t *testing.T, name string) json.RawMessage { return sample.Event(t, name) }

func newHandler() (*Handler, *memstore.Store) {
	st := memstore.New(memstore.Options{})
	return &Handler{Engine: engine.New(engine.Options{State: st, Transport: memstore.NewTransport(memstore.TransportOptions{})})}, st
}

func TestHandleSampleEvents(t *testing.T) {
	tests := []struct {
		event     string
		jobs      int
		errCode   string
		errField  string
		firstTick int64
		keyAhead  []int64 // per job, for keyed jobs
	}{
		{event: "enqueue.json", jobs: 1, firstTick: 1},
		{event: "enqueue-batch.json", jobs: 3, firstTick: 1},
		{event: "enqueue-keyed.json", jobs: 3, firstTick: 1, keyAhead: []int64{0, 1, 0}},
		{event: "enqueue-bad.json", errCode: "invalid_interval", errField: "interval"},
	}
	for _, tt := range tests {
		t.Run(tt.event, func(t *testing.T) {
			h, st := newHandler()
			resp, err := h.Handle(context.Background(), event(t, tt.event))
			if err != nil {
				t.Fatal(err)
			}
			if tt.errCode != "" {
				if resp.Error == nil || resp.Error.Code != tt.errCode || resp.Error.Field != tt.errField {
					t.Fatalf("got %+v, want error %s on %s", resp, tt.errCode, tt.errField)
				}
				if qs, _ := st.ListQueues(context.Background()); len(qs) != 0 {
					t.Errorf("bad input wrote queues %v", qs)
				}
				return
			}
			if resp.Error != nil || len(resp.Jobs) != tt.jobs {
				t.Fatalf("got %+v, want %d jobs", resp, tt.jobs)
			}
			for i, a := range resp.Jobs {
				if a.Ticket != tt.firstTick+int64(i) || a.Position != int64(i) || a.JobID == "" || a.SlotAt.IsZero() {
					t.Errorf("job %d: %+v", i, a)
				}
				switch {
				case tt.keyAhead == nil && (a.Key != "" || a.KeyAhead != nil):
					t.Errorf("job %d: key %q, key_ahead %v; want none", i, a.Key, a.KeyAhead)
				case tt.keyAhead != nil && (a.Key == "" || a.KeyAhead == nil || *a.KeyAhead != tt.keyAhead[i]):
					t.Errorf("job %d: key %q, key_ahead %v; want %d", i, a.Key, a.KeyAhead, tt.keyAhead[i])
				}
			}
		})
	}
}

// The wire shape of an error is {"error":{"code","field","message"}}.
func TestErrorShape(t *testing.T) {
	tests := []struct {
		name, body, code, field string
	}{
		{"unknown field", `{"queue":"q","job":{"kind":"k"},"priority":1}`, "unknown_field", "priority"},
		{"malformed", `{"queue":`, "malformed_json", "body"},
		{"bad queue", `{"queue":"no spaces","job":{"kind":"k"}}`, "invalid_queue", "queue"},
		{"no jobs", `{"queue":"q"}`, "no_jobs", "jobs"},
		{"bad job in batch", `{"queue":"q","jobs":[{"kind":"k"},{}]}`, "no_target", "jobs[1].kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newHandler()
			resp, err := h.Handle(context.Background(), json.RawMessage(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(resp)
			var wire struct {
				Error map[string]string `json:"error"`
				Jobs  any               `json:"jobs"`
			}
			if err := json.Unmarshal(b, &wire); err != nil {
				t.Fatal(err)
			}
			if wire.Error["code"] != tt.code || wire.Error["field"] != tt.field || wire.Error["message"] == "" || wire.Jobs != nil {
				t.Errorf("got %s, want code %s field %s", b, tt.code, tt.field)
			}
		})
	}
}

type failing struct{ err error }

func (f failing) Enqueue(context.Context, job.EnqueueRequest) (engine.EnqueueResult, error) {
	return engine.EnqueueResult{}, f.err
}

// A failure that is not the caller's is a function error, so callers retry.
func TestInternalErrorIsFunctionError(t *testing.T) {
	boom := errors.New("dynamodb unavailable")
	h := &Handler{Engine: failing{boom}}
	_, err := h.Handle(context.Background(), event(t, "enqueue.json"))
	if !errors.Is(err, boom) {
		t.Errorf("got %v, want %v", err, boom)
	}
}

// TestEnqueueCreatesWithLimit: the call that creates a queue gives it the
// limit it names, in any form (interval; rate with burst; window),
// instead of the stack's default limit (here a list of two), and a skew
// of at most a quarter of the limit's least average time between starts.
// A queue that exists keeps its own limit, whatever a later call gives.
func TestEnqueueCreatesWithLimit(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	eng := engine.New(engine.Options{State: st, Transport: memstore.NewTransport(memstore.TransportOptions{}),
		Defaults: slot.Config{Limits: []slot.Limit{{Interval: 2 * time.Second}, {Window: api.Rate{N: 100, Per: time.Hour}}}, Skew: 10 * time.Millisecond}})
	h := &Handler{Engine: eng}
	for _, tt := range []struct {
		name, limit string
		want        slot.Limits
		skew        time.Duration
	}{
		{"interval", `"interval":"4ms"`, slot.Limits{{Interval: 4 * time.Millisecond}}, time.Millisecond},
		{"rate", `"rate":"100/1s"`, slot.Limits{{Rate: api.Rate{N: 100, Per: time.Second}}}, 2500 * time.Microsecond},
		{"rate and burst", `"rate":"10/1m","burst":4`, slot.Limits{{Rate: api.Rate{N: 10, Per: time.Minute}, Burst: 4}}, 10 * time.Millisecond},
		{"window", `"window":"5000/1h"`, slot.Limits{{Window: api.Rate{N: 5000, Per: time.Hour}}}, 10 * time.Millisecond},
		{"none", ``, slot.Limits{{Interval: 2 * time.Second}, {Window: api.Rate{N: 100, Per: time.Hour}}}, 10 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := strings.ReplaceAll(tt.name, " ", "-")
			body := fmt.Sprintf(`{"queue":%q,%s,"job":{"kind":"k"}}`, q, tt.limit)
			if tt.limit == "" {
				body = fmt.Sprintf(`{"queue":%q,"job":{"kind":"k"}}`, q)
			}
			if resp, err := h.Handle(ctx, json.RawMessage(body)); err != nil || resp.Error != nil {
				t.Fatalf("%s: %v %+v", body, err, resp.Error)
			}
			got, err := eng.Queue(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if ls := got.Config.LimitList(); !reflect.DeepEqual(ls, tt.want) || got.Config.Skew != tt.skew {
				t.Errorf("created with %s: limits %v skew %v; want %v skew %v", tt.limit, ls, got.Config.Skew, tt.want, tt.skew)
			}
			// Another limit on the queue that now exists: accepted, and
			// the queue keeps its own.
			again := fmt.Sprintf(`{"queue":%q,"window":"3/1m","job":{"kind":"k"}}`, q)
			if resp, err := h.Handle(ctx, json.RawMessage(again)); err != nil || resp.Error != nil {
				t.Fatalf("%s: %v %+v", again, err, resp.Error)
			}
			if kept, _ := eng.Queue(ctx, q); !reflect.DeepEqual(kept.Config, got.Config) {
				t.Errorf("an enqueue changed the queue's configuration:\nbefore %+v\nafter  %+v", got.Config, kept.Config)
			}
		})
	}
}
