package job_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
)

// Decode a producer's enqueue request; bad input is an InputError naming
// the full path of the field.
func ExampleDecodeEnqueue() {
	now := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	r, err := job.DecodeEnqueue([]byte(`{"queue":"emails","job":{"id":"welcome-42","kind":"email.send","payload":{"to":"ada@example.com"}}}`), now)
	fmt.Println(r.Queue, r.Specs()[0].ID, err)

	_, err = job.DecodeEnqueue([]byte(`{"queue":"emails","jobs":[{"kind":"email.send"},{"kind":"email.send","colour":"red"}]}`), now)
	var in *input.Error
	if errors.As(err, &in) {
		fmt.Println(in.Code, in.Field)
	}
	// Output:
	// emails welcome-42 <nil>
	// unknown_field jobs[1].colour
}

// The legal status changes: state stores refuse the others.
func ExampleCheckMove() {
	fmt.Println(job.CheckMove(job.Queued, job.Running))
	fmt.Println(job.CheckMove(job.Running, job.Queued)) // a retry, as a new ticket
	err := job.CheckMove(job.Succeeded, job.Queued)
	fmt.Println(err, errors.Is(err, job.ErrIllegalMove))
	// Output:
	// <nil>
	// <nil>
	// illegal status change: succeeded to queued true
}
