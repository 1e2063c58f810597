package job

import "github.com/slotq/slotq/pkg/api"

// API returns a copy of the job's record as its wire type: what the admin
// function answers and what a Go handler receives. The two are one type
// (Job is defined by api.Job), so no field can be left behind.
func (j *Job) API() *api.Job {
	a := api.Job(*j)
	return &a
}

// API returns the request as a producer writes it (api.EnqueueRequest):
// its fields are api.EnqueueRequest's, read strictly (slot.Duration,
// slot.WireRate), with Occurrences, which no request carries, left out.
func (r EnqueueRequest) API() api.EnqueueRequest {
	a := api.EnqueueRequest{
		Queue: r.Queue, Interval: (*api.Duration)(r.Interval), Rate: (*api.Rate)(r.Rate), Burst: r.Burst,
		Window: (*api.Rate)(r.Window), Job: (*api.Spec)(r.Job),
	}
	for _, s := range r.Jobs {
		a.Jobs = append(a.Jobs, api.Spec(s))
	}
	return a
}
