package dynamostore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// A job's record: its item, written and read.

// jobItem encodes a job record. Zero times and empty strings are left out.
func jobItem(j job.Job, tok string) map[string]types.AttributeValue {
	m := jobKey(job.Ref{Queue: j.Queue, ID: j.ID})
	m[attrWriteToken] = str(tok)
	m[attrQueue] = str(j.Queue)
	m[attrJobID] = str(j.ID)
	m[attrStatus] = str(string(j.Status))
	if j.Status.Listed() {
		// The index is sparse: a job that runs without trouble never
		// enters it, so it costs no index write (job.Status.Listed).
		m[attrQueueStatus] = str(queueStatus(j.Queue, j.Gen, j.Status))
	}
	if j.Batched && j.Status == job.Queued {
		// A queued job of a batch is listed for its batch's leader
		// (ListBatch) until it is claimed.
		m[attrQueueStatus] = str(queueStatus(j.Queue, j.Gen, statusBatch))
	}
	if j.Gen != 0 {
		m[attrGen] = num(j.Gen)
	}
	m[attrTicket] = num(j.Ticket)
	if j.Order != 0 {
		m[attrOrder] = num(j.Order)
	}
	// The due index (due.go): a parked job due at a time, or held by a
	// pause in its queue's partition, in line order.
	pk, sk := jobPK(j.Queue, j.ID), skJob
	setDue(m, pk, sk, engine.JobDue(j))
	switch {
	case engine.JobHeld(j):
		m[attrDuePK] = str(heldPK(j.Queue, j.Gen))
		m[attrDueSK] = num(j.LineOrder())
	case engine.JobInRoom(j):
		m[attrDuePK] = str(roomPK(j.Queue, j.Gen, slot.PriorityOf(j.Priority), j.Key))
		m[attrDueSK] = num(j.Ticket)
	}
	m[attrAttempt] = num(int64(j.Attempt))
	if j.Booking != 0 {
		m[attrBooking] = num(j.Booking)
	}
	for name, n := range map[string]int{
		attrRetickets: j.Retickets, attrSentBack: j.SentBack, attrReruns: j.Reruns, attrRerunFrom: j.RerunFrom, attrResultDropped: j.ResultDropped,
		attrSlowDowns: j.SlowDowns, attrPriority: j.Priority,
	} {
		if n != 0 {
			m[name] = num(int64(n))
		}
	}
	if len(j.Result) > 0 {
		m[attrResult] = str(string(j.Result))
	}
	if h := job.EncodeHistory(j.History, j.EnqueuedAt); h != "" {
		m[attrHistory] = str(h)
	}
	if j.HistoryDropped != 0 {
		m[attrHistoryDropped] = num(int64(j.HistoryDropped))
	}
	if j.Scheduled {
		m[attrScheduled] = boolean(true)
	}
	if j.Batched {
		m[attrBatched] = boolean(true)
	}
	if j.Detached {
		m[attrDetached] = boolean(true)
	}
	for name, v := range map[string]string{
		attrKind: j.Kind, attrTarget: j.Target, attrParkReason: string(j.ParkReason), attrLastError: j.LastError,
		attrLaneKey: j.Key, attrTraceParent: j.TraceParent, attrTraceState: j.TraceState, attrAttemptSpan: j.AttemptSpan,
		attrDebounceKey: j.DebounceKey,
	} {
		if v != "" {
			m[name] = str(v)
		}
	}
	if len(j.Payload) > 0 {
		m[attrPayload] = payloadValue(j.Payload)
	}
	for name, t := range map[string]time.Time{
		attrSlotAt: j.SlotAt, attrNotBefore: j.NotBefore, attrRetryAt: j.RetryAt, attrDueAt: j.DueAt, attrEnqueuedAt: j.EnqueuedAt,
		attrStartedAt: j.StartedAt, attrFinishedAt: j.FinishedAt, attrExpiresAt: j.ExpiresAt,
	} {
		if !t.IsZero() {
			m[name] = timeNum(t)
		}
	}
	if !j.ExpiresAt.IsZero() {
		m[attrTTL] = num(ttlSeconds(j.ExpiresAt))
	}
	return m
}

// ttlSeconds rounds up, so DynamoDB never deletes a job before ExpiresAt.
func ttlSeconds(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() != 0 {
		s++
	}
	return s
}

// decodeJob reads a job item.
func decodeJob(m map[string]types.AttributeValue) (job.Job, error) {
	it := item{m: m}
	j := job.Job{
		Queue:      it.str(attrQueue),
		Gen:        it.int(attrGen),
		ID:         it.str(attrJobID),
		Kind:       it.str(attrKind),
		Target:     it.str(attrTarget),
		Payload:    it.bytes(attrPayload),
		Status:     job.Status(it.str(attrStatus)),
		Ticket:     it.int(attrTicket),
		SlotAt:     it.time(attrSlotAt),
		NotBefore:  it.time(attrNotBefore),
		RetryAt:    it.time(attrRetryAt),
		Scheduled:  it.bool(attrScheduled),
		Key:        it.str(attrLaneKey),
		Detached:   it.bool(attrDetached),
		Batched:    it.bool(attrBatched),
		Attempt:    int(it.int(attrAttempt)),
		Retickets:  int(it.int(attrRetickets)),
		SentBack:   int(it.int(attrSentBack)),
		Order:      it.int(attrOrder),
		Reruns:     int(it.int(attrReruns)),
		RerunFrom:  int(it.int(attrRerunFrom)),
		SlowDowns:  int(it.int(attrSlowDowns)),
		Priority:   int(it.int(attrPriority)),
		Booking:    it.int(attrBooking),
		ParkReason: job.ParkReason(it.str(attrParkReason)),
		DueAt:      it.time(attrDueAt),
		EnqueuedAt: it.time(attrEnqueuedAt),
		StartedAt:  it.time(attrStartedAt),
		FinishedAt: it.time(attrFinishedAt),
		LastError:  it.str(attrLastError),
		ExpiresAt:  it.time(attrExpiresAt),

		TraceParent: it.str(attrTraceParent),
		TraceState:  it.str(attrTraceState),
		AttemptSpan: it.str(attrAttemptSpan),
		DebounceKey: it.str(attrDebounceKey),

		HistoryDropped: int(it.int(attrHistoryDropped)),
		ResultDropped:  int(it.int(attrResultDropped)),
	}
	if r := it.str(attrResult); r != "" {
		j.Result = json.RawMessage(r)
	}
	if it.err != nil {
		return job.Job{}, fmt.Errorf("decode job: %w", it.err)
	}
	h, err := job.DecodeHistory(it.str(attrHistory), j.EnqueuedAt)
	if err != nil {
		return job.Job{}, fmt.Errorf("decode job: %w", err)
	}
	j.History = h
	return j, nil
}
