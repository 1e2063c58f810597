package api

import (
	"encoding/json"
	"time"
)

// The admin function's schedule operations (AdminRequest.Op): see
// docs/schedules.md.
const (
	OpCreateSchedule = "create_schedule"
	OpListSchedules  = "list_schedules"
	OpGetSchedule    = "get_schedule"
	OpPauseSchedule  = "pause_schedule"
	OpResumeSchedule = "resume_schedule"
	OpDeleteSchedule = "delete_schedule"
)

// The missed-occurrence policies of a schedule (ScheduleSpec.Missed).
const (
	// MissedNone skips the occurrences whose time passed while the
	// schedule was paused or the stack's resume function did not run.
	MissedNone = "none"
	// MissedLatest makes the latest of them, at once. The default.
	MissedLatest = "latest"
	// MissedAll makes them all, the latest MaxMissed at most.
	MissedAll = "all"
	// MaxMissed bounds the missed occurrences MissedAll makes.
	MaxMissed = 100
)

// ScheduleJob is the job each occurrence of a schedule becomes: a Spec
// without its id (the schedule's name and the occurrence time) and
// not_before (the occurrence time).
type ScheduleJob struct {
	Kind    string          `json:"kind,omitempty"`
	Target  string          `json:"target,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Key     string          `json:"key,omitempty"`
}

// ScheduleSpec is a recurring rule on a queue: Every (1s or more) or Cron
// (5 fields, or 6 with seconds first) read in the IANA zone TZ (default
// UTC), from Start to End (both optional), and the Job each occurrence
// becomes.
type ScheduleSpec struct {
	Every  *Duration   `json:"every,omitempty"`
	Cron   string      `json:"cron,omitempty"`
	TZ     string      `json:"tz,omitempty"`
	Start  *time.Time  `json:"start,omitempty"`
	End    *time.Time  `json:"end,omitempty"`
	Missed string      `json:"missed,omitempty"`
	Job    ScheduleJob `json:"job"`
}

// Schedule is a schedule as stored: its spec, whether it is paused, its
// next occurrence (zero once it ended) and what it made.
type Schedule struct {
	Queue  string       `json:"queue"`
	Name   string       `json:"name"`
	Gen    int64        `json:"gen,omitempty"`
	Spec   ScheduleSpec `json:"spec"`
	Paused bool         `json:"paused,omitempty"`
	// Next is the first occurrence not made yet; DueAt when the resume
	// function makes it (a lead before).
	Next  time.Time `json:"next,omitzero"`
	DueAt time.Time `json:"due_at,omitzero"`
	// Last is the latest occurrence made; Made counts them, Skipped the
	// missed ones its policy skipped.
	Last    time.Time `json:"last,omitzero"`
	Made    int64     `json:"made"`
	Skipped int64     `json:"skipped,omitempty"`
	// Error says why the last occurrences could not become jobs.
	Error     string    `json:"error,omitempty"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
}

// OccurrenceID is the job id of schedule name's occurrence at t
// ("name:2026-11-25T07:00:00.000Z"): GetJob finds an occurrence's job
// by it.
func OccurrenceID(name string, t time.Time) string {
	return name + ":" + t.UTC().Format("2006-01-02T15:04:05.000Z")
}
