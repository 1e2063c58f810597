package job

import "github.com/slotq/slotq/pkg/api"

// API returns a copy of the job's record as its wire type: what the admin
// function answers and what a Go handler receives. The two are one type
// (Job is defined by api.Job), so no field can be left behind.
func (j *Job) API() *api.Job {
	a := api.Job(*j)
	return &a
}
