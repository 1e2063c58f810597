package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/pkg/api"
)

// slowQueue creates queue slow, of one start a minute, and enqueues 40
// jobs on it: the later ones parked beyond the transport's reach. It
// returns the last.
func slowQueue(t *testing.T, h *Handler, eng *engine.Engine) engine.Accepted {
	t.Helper()
	handle(t, h, json.RawMessage(`{"op":"create","queue":"slow","config":{"interval":"1m","targets":["lambda:x"]}}`))
	specs := make([]job.Spec, 40)
	for i := range specs {
		specs[i] = job.Spec{ID: fmt.Sprintf("j%02d", i), Kind: "echo"}
	}
	res, err := eng.Enqueue(context.Background(), job.EnqueueRequest{Queue: "slow", Jobs: specs})
	if err != nil {
		t.Fatal(err)
	}
	return res.Jobs[len(res.Jobs)-1]
}

// configure answers how many booked jobs a new limit moved and by how
// much at most, and a moved job's record (get) shows its new slot_at: the
// jobs parked beyond the transport's reach (15 minutes on the embedded
// transport, as on SQS) of a queue under one start a minute move to one
// start every 10 seconds.
func TestConfigureMovesBookedJobs(t *testing.T) {
	h, eng := newHandler()
	ctx := context.Background()
	do := func(body string) Response {
		t.Helper()
		r, err := h.Handle(ctx, json.RawMessage(body))
		if err != nil || r.Error != nil {
			t.Fatalf("%s: %v %+v", body, err, r.Error)
		}
		return r
	}
	last := slowQueue(t, h, eng)
	r := do(`{"op":"configure","queue":"slow","config":{"interval":"10s"}}`)
	if r.Reslot == nil || r.Reslot.Moved < 20 || r.Reslot.MaxShiftMs < int64(15*time.Minute/time.Millisecond) {
		t.Fatalf("configure answered %+v; want the 24 or so jobs parked beyond the transport's reach moved, by 15 minutes or more", r.Reslot)
	}
	b, _ := json.Marshal(r)
	var wire api.AdminResponse
	if err := json.Unmarshal(b, &wire); err != nil || wire.Reslot == nil || wire.Reslot.Moved != r.Reslot.Moved || !strings.Contains(string(b), `"max_shift_ms":`) {
		t.Fatalf("the answer on the wire: %s (%v)", b, err)
	}
	got := do(`{"op":"get","queue":"slow","job_id":"` + last.JobID + `"}`).Job
	if !got.SlotAt.Before(last.SlotAt.Add(-15 * time.Minute)) {
		t.Fatalf("the last job shows slot_at %v after the change, %v before it: not moved", got.SlotAt, last.SlotAt)
	}
	again := do(`{"op":"configure","queue":"slow","config":{"interval":"10s"}}`)
	if again.Reslot == nil || again.Reslot.Moved != 0 {
		t.Fatalf("the same limit again moved %+v; want none", again.Reslot)
	}
}

// configure near its invocation's deadline answers at once: it books the
// jobs again and writes none of their moves, saying how many remain, and
// each job's get shows its new slot_at all the same; the resume function's
// next run moves them.
func TestConfigureNearItsDeadline(t *testing.T) {
	h, eng := newHandler()
	ctx := context.Background()
	last := slowQueue(t, h, eng)
	// Five seconds left: less than configure keeps in hand for its
	// answer.
	near, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := h.Handle(near, json.RawMessage(`{"op":"configure","queue":"slow","config":{"interval":"10s"}}`))
	if err != nil || r.Error != nil {
		t.Fatalf("configure: %v %+v", err, r.Error)
	}
	if r.Reslot == nil || r.Reslot.Moved != 0 || r.Reslot.Remaining < 20 {
		t.Fatalf("configure near its deadline answered %+v; want nothing moved and the 24 or so parked jobs remaining", r.Reslot)
	}
	b, _ := json.Marshal(r)
	if !strings.Contains(string(b), `"remaining":`) {
		t.Fatalf("the answer on the wire says nothing of what remains: %s", b)
	}
	shown := func(id string) time.Time {
		r, err := h.Handle(ctx, json.RawMessage(`{"op":"get","queue":"slow","job_id":"`+id+`"}`))
		if err != nil || r.Job == nil {
			t.Fatalf("get: %v %+v", err, r.Error)
		}
		return r.Job.SlotAt
	}
	if at := shown(last.JobID); !at.Before(last.SlotAt.Add(-15 * time.Minute)) {
		t.Fatalf("the last job shows slot_at %v after the change, %v before it: not its new slot", at, last.SlotAt)
	}
	parked, err := eng.Jobs(ctx, engine.ListRequest{Queue: "slow", Status: job.Parked, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{}
	for _, p := range parked {
		want[p.ID] = shown(p.ID)
	}
	if _, err := eng.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	moved := 0
	for id, at := range want {
		j, err := eng.Job(ctx, job.Ref{Queue: "slow", ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if j.SlotAt.Equal(at) {
			moved++
		}
	}
	list, err := eng.Jobs(ctx, engine.ListRequest{Queue: "slow", Status: job.Parked, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list {
		if !p.SlotAt.Equal(want[p.ID]) {
			t.Fatalf("after a resume run %s's record has slot_at %v; %v was shown for it", p.ID, p.SlotAt, want[p.ID])
		}
	}
	if moved != len(want) {
		t.Fatalf("%d of %d jobs show the slot_at shown for them before the resume run", moved, len(want))
	}
}

func do(t *testing.T, h *Handler, body string) Response {
	t.Helper()
	r, err := h.Handle(context.Background(), json.RawMessage(body))
	if err != nil || r.Error != nil {
		t.Fatalf("%s: %v %+v", body, err, r.Error)
	}
	return r
}
