package awssim_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/bench/awssim"
	"github.com/slotq/slotq/internal/bench/benchdoc"
	"github.com/slotq/slotq/internal/dev/dynamolocal"
	"github.com/slotq/slotq/internal/dev/testenv"
)

// TestCeilingRun runs the ceiling's measurement (cmd/ceiling, which make
// bench runs at rising rates) once, small, on DynamoDB Local: every job
// starts, each enqueue call is counted with its take, each start with a
// gate, the state item is sized, and the run's row is one benchdoc reads
// with the ceiling table's columns. It asserts no figure of the host.
func TestCeilingRun(t *testing.T) {
	dynamolocal.Require(t)
	cl, err := awssim.Open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// A slow rate whose skew and lead a loaded host's DynamoDB Local
	// keeps within, mostly; a worker that misses its start re-tickets the
	// job, which starts later: the run waits for every job as long as a
	// test waits for an event.
	const jobs, batch = 16, 2
	log := &testenv.Buffer{}
	r, err := awssim.Ceiling(t.Context(), cl, awssim.CeilingOptions{Rate: 5, Batch: batch, Jobs: jobs, Lead: time.Second,
		Skew: 150 * time.Millisecond, Wait: testenv.Patience, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("figures: %s", r.Cells())
	if r.Unstarted != 0 {
		t.Errorf("%d of %d jobs did not start:\n%s", r.Unstarted, jobs, log)
	}
	if r.EnqueueCalls != jobs/batch || r.TakeWrites < r.EnqueueCalls {
		t.Errorf("%d enqueue calls with %d take writes; want %d calls, a take each at least", r.EnqueueCalls, r.TakeWrites, jobs/batch)
	}
	// A booked start's gate is a read of the state item (a start that
	// cuts in, or one on a gated queue, writes it): a read per start at
	// least, and gates that write only when something cut in.
	if r.StateReads < jobs || r.ItemBytes == 0 || r.Ratio <= 0 {
		t.Errorf("%d gate writes, item %d bytes, %d state reads, makespan × ideal %.3f; want a read per start at least, and a size and a ratio measured",
			r.GateWrites, r.ItemBytes, r.StateReads, r.Ratio)
	}
	table, err := benchdoc.Cells(strings.NewReader("figures: "+r.Cells()+"\n"), io.Discard, "figures: ")
	if err != nil || len(table.Rows) != 1 || len(table.Header) != 23 || table.Header[0] != "rate" || table.Rows[0][0] != "5/1s burst 10" {
		t.Errorf("the run's row %q reads as %+v (%v); want the ceiling table's 23 columns", r.Cells(), table, err)
	}
	if _, err := awssim.Ceiling(t.Context(), cl, awssim.CeilingOptions{Rate: 5, Batch: batch, Jobs: 20}); err == nil {
		t.Error("20 jobs in batches of 2 from 8 producers: accepted; want an error")
	}
}
