// Package enqueue is the enqueue function's handler: an Invoke payload
// ({"queue","job"|"jobs"}) in, engine.Enqueue, each job's ticket, slot and
// position out. functions/enqueue runs it on Lambda; pkg/local runs the same
// handler in one process.
package enqueue

import (
	"context"
	"encoding/json"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/lambdafn"
	"github.com/slotq/slotq/internal/metrics"
	"github.com/slotq/slotq/pkg/api"
)

// Enqueuer is the engine call the handler makes.
type Enqueuer interface {
	Enqueue(ctx context.Context, req job.EnqueueRequest) (engine.EnqueueResult, error)
}

// Response is the function's answer, api.EnqueueResponse: the accepted
// jobs, in request order, or an error object for a request that cannot be
// accepted as it is (in which case nothing was written).
type Response = api.EnqueueResponse

// Handler translates an Invoke payload into engine.Enqueue.
type Handler struct {
	Engine Enqueuer
	// Metrics, if set, counts accepted jobs and refused requests; Handle
	// flushes it after each call.
	Metrics *metrics.Recorder
}

// Handle decodes the request strictly and enqueues it. Bad input answers
// {"error":{…}}; a failure of DynamoDB or SQS is returned as an error,
// which Lambda reports as a function error the caller may retry.
func (h *Handler) Handle(ctx context.Context, payload json.RawMessage) (Response, error) {
	if h.Metrics != nil {
		defer h.Metrics.Flush(ctx)
	}
	var req job.EnqueueRequest
	if err := job.Decode(payload, &req); err != nil {
		return h.failed(err)
	}
	res, err := h.Engine.Enqueue(ctx, req)
	if err != nil {
		return h.failed(err)
	}
	if h.Metrics != nil {
		n := 0
		for _, a := range res.Jobs {
			if !a.Existing {
				n++
			}
		}
		h.Metrics.Accepted(res.Queue, n)
	}
	return Response{Queue: res.Queue, Jobs: res.Jobs}, nil
}

func (h *Handler) failed(err error) (Response, error) {
	if e := lambdafn.ErrorOf(err); e != nil {
		if h.Metrics != nil {
			h.Metrics.Refused(e.Code)
		}
		return Response{Error: e}, nil
	}
	return Response{}, err
}
