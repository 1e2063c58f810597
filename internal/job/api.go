package job

import "github.com/slotq/slotq/pkg/api"

// API returns the job's record as its wire type: what the admin function
// answers and what a Go handler receives. TestAPI holds the two to the
// same JSON.
func (j *Job) API() *api.Job {
	return &api.Job{
		Queue: j.Queue, ID: j.ID, Gen: j.Gen, Kind: j.Kind, Target: j.Target, Payload: j.Payload,
		Key: j.Key, Status: j.Status, Ticket: j.Ticket, Order: j.Order, SlotAt: j.SlotAt,
		NotBefore: j.NotBefore, Scheduled: j.Scheduled, Detached: j.Detached, Attempt: j.Attempt,
		Retickets: j.Retickets, SentBack: j.SentBack, SlowDowns: j.SlowDowns, RetryAt: j.RetryAt, Reruns: j.Reruns, RerunFrom: j.RerunFrom, ParkReason: j.ParkReason,
		DueAt: j.DueAt, EnqueuedAt: j.EnqueuedAt, StartedAt: j.StartedAt, FinishedAt: j.FinishedAt,
		LastError: j.LastError, Result: j.Result, ResultDropped: j.ResultDropped, ExpiresAt: j.ExpiresAt,
		History: j.History, HistoryDropped: j.HistoryDropped, TraceParent: j.TraceParent, TraceState: j.TraceState,
		AttemptSpan: j.AttemptSpan,
	}
}
