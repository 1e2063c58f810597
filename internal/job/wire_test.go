package job_test

import (
	"testing"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/job"
)

// TestEnqueueRequestAPI holds EnqueueRequest.API to the fields of
// EnqueueRequest and api.EnqueueRequest: a producer's field the server
// does not read, or one it reads that the wire type lacks, fails here.
func TestEnqueueRequestAPI(t *testing.T) {
	testenv.Converts(t, job.EnqueueRequest.API, "job.EnqueueRequest.Occurrences")
}
