package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/pkg/api"
)

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
	do(`{"op":"create","queue":"slow","config":{"interval":"1m","targets":["lambda:x"]}}`)
	specs := make([]job.Spec, 40)
	for i := range specs {
		specs[i] = job.Spec{ID: fmt.Sprintf("j%02d", i), Kind: "echo"}
	}
	res, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "slow", Jobs: specs})
	if err != nil {
		t.Fatal(err)
	}
	last := res.Jobs[len(res.Jobs)-1]
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
