// Package admin is the admin function's handler: one operation
// ({"op": …}) in, the engine call, its answer out. functions/admin runs it
// on Lambda; pkg/local runs the same handler in one process.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/lambdafn"
	"github.com/slotq/slotq/internal/metrics"
	"github.com/slotq/slotq/internal/schedule"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/internal/startlog"
	"github.com/slotq/slotq/pkg/api"
)

// Admin is the engine calls the handler makes.
type Admin interface {
	CreateQueue(ctx context.Context, name string, cfg slot.Config) (engine.Queue, error)
	Reconfigure(ctx context.Context, name string, cfg slot.Config) (engine.Queue, engine.Reslot, error)
	Change(ctx context.Context, name string, u slot.ConfigUpdate) (engine.Queue, engine.Reslot, error)
	Queue(ctx context.Context, name string) (engine.Queue, error)
	Queues(ctx context.Context) ([]engine.Queue, error)
	Pause(ctx context.Context, name string, until time.Time) (slot.State, error)
	Unpause(ctx context.Context, name string) (engine.ResumeReport, error)
	Purge(ctx context.Context, name string) (int, error)
	DeleteQueue(ctx context.Context, name string) (int, error)
	Stats(ctx context.Context, name string) (engine.Stats, error)
	Job(ctx context.Context, k job.Ref) (job.Job, error)
	Jobs(ctx context.Context, r engine.ListRequest) ([]job.Job, error)
	CancelJob(ctx context.Context, k job.Ref) (job.Job, error)
	Reindex(ctx context.Context) (engine.ReindexReport, error)
	Retry(ctx context.Context, r engine.RetryRequest) (engine.RetryResult, error)
	Redrive(ctx context.Context, dlq engine.DeadLetterQueue, limit int) (engine.RedriveReport, error)
	Keys(ctx context.Context, name string) ([]engine.KeyInfo, error)
	Key(ctx context.Context, name, key string) (engine.KeyInfo, error)
	SetKeyLimits(ctx context.Context, name string, ls []engine.KeyLimit) ([]engine.KeyInfo, error)
}

var _ Admin = (*engine.Engine)(nil)

// The window and page of starts.
const (
	// DefaultStartsWindow is how far back starts looks without a since.
	DefaultStartsWindow = 15 * time.Minute
	// MaxStartsWindow is the furthest back a since may lie (with a
	// minute's grace for the caller's clock and the call's transit).
	MaxStartsWindow = time.Hour
	// DefaultStartsLimit and MaxStartsLimit bound the starts one call
	// answers.
	DefaultStartsLimit = 200
	MaxStartsLimit     = 1000
)

// Request is one admin operation.
type Request struct {
	// Op is create, configure, pause, resume, purge, delete, stats,
	// starts, get, cancel, list, retry, redrive, list_keys, get_key,
	// set_key_limits or reindex (once, after an upgrade that added the due
	// index: engine.Reindex), or one of ScheduleOps.
	Op    string `json:"op"`
	Queue string `json:"queue,omitempty"`
	// Config holds the settings of create and configure. A setting left
	// out takes its default on create and keeps the queue's value on
	// configure; one given as zero is refused unless zero is a setting of
	// its own (slot.ZeroSetting). configure requires it.
	Config *slot.ConfigUpdate `json:"config,omitempty"`
	// NoActivity, for stats, leaves the queue's recent activity out: no
	// metrics read (CloudWatch GetMetricData on a stack), for a caller
	// that polls the counters more often than the activity changes.
	NoActivity bool `json:"no_activity,omitempty"`
	// Reset, for configure, gives the settings Config leaves out their
	// defaults instead of keeping the queue's: the configuration is
	// replaced whole.
	Reset bool `json:"reset,omitempty"`
	// Until, for pause, makes the resume function lift the pause then.
	Until *time.Time `json:"until,omitempty"`
	// Since, for starts, is the time the starts listed begin at
	// (default: DefaultStartsWindow ago; at most MaxStartsWindow ago);
	// Limit caps them (default DefaultStartsLimit, at most
	// MaxStartsLimit).
	Since *time.Time `json:"since,omitempty"`
	// JobID names the job for get and cancel.
	JobID string `json:"job_id,omitempty"`
	// Limit, for redrive, caps the dead-letter messages one call receives
	// (default 100, at most 1000).
	//
	// Status, After and Limit page through a queue's jobs for list:
	// jobs of one listed status, parked (the default) or failed, by ticket, after ticket After,
	// at most Limit (default 100). list without a queue lists the queues.
	Status job.Status `json:"status,omitempty"`
	After  int64      `json:"after,omitempty"`
	Limit  int        `json:"limit,omitempty"`
	// JobIDs names the jobs retry runs again (failed or cancelled ones,
	// at most 100); or Failed runs again a page of the queue's failed
	// jobs, after ticket After and up to ticket UpTo (0: the queue's
	// ticket now; the answer says it, for the next page), at most Limit
	// (default 100, at most 500). By says who asked, for the jobs'
	// histories (default "admin").
	JobIDs []string `json:"job_ids,omitempty"`
	Failed bool     `json:"failed,omitempty"`
	UpTo   int64    `json:"up_to,omitempty"`
	By     string   `json:"by,omitempty"`
	// Name names the schedule of the schedule ops (schedules.go);
	// Schedule is create_schedule's rule and job.
	Name     string         `json:"name,omitempty"`
	Schedule *schedule.Spec `json:"schedule,omitempty"`
	// Key names the key of get_key. Keys, for set_key_limits, gives each
	// key it names limits of its own, or clears them (limits null), at
	// most slot.MaxKeyOverrides keys a call.
	Key  string     `json:"key,omitempty"`
	Keys []KeyLimit `json:"keys,omitempty"`
}

// API returns the request as a user writes it (api.AdminRequest): its
// fields are api.AdminRequest's, read strictly (slot.ConfigUpdate,
// schedule.Spec, KeyLimit).
func (r Request) API() api.AdminRequest {
	a := api.AdminRequest{
		Op: r.Op, Queue: r.Queue, Config: (*api.ConfigUpdate)(r.Config), Reset: r.Reset, NoActivity: r.NoActivity,
		Until: r.Until, JobID: r.JobID, Since: r.Since, Status: r.Status, After: r.After, Limit: r.Limit,
		JobIDs: r.JobIDs, Failed: r.Failed, UpTo: r.UpTo, By: r.By, Name: r.Name, Key: r.Key,
		Keys: each(r.Keys, func(k KeyLimit) api.KeyLimit { return api.KeyLimit(k) }),
	}
	if r.Schedule != nil {
		a.Schedule = ptr(r.Schedule.API())
	}
	return a
}

// KeyLimit is one key of set_key_limits: {"key": "acme", "limits":
// [{"rate": "20/1s"}]} gives key acme limits of its own, each in any form
// of a queue's limits; {"key": "acme", "limits": null} clears them, so
// that the key follows the queue's key_limits again. limits must be
// given (a list or null): a key left without it is refused, not cleared.
// It is api.KeyLimit read strictly.
type KeyLimit api.KeyLimit

// UnmarshalJSON reads one key's limits strictly, by the rules of a
// queue's key_limits (unknown fields, durations without units and bad
// rates are refused), naming a bad value by its path ("limits[0].rate").
func (k *KeyLimit) UnmarshalJSON(b []byte) error {
	var w struct {
		Key    string          `json:"key"`
		Limits json.RawMessage `json:"limits"`
		Weight *int            `json:"weight"`
	}
	if err := input.Decode(b, &w); err != nil {
		return err
	}
	if len(w.Limits) == 0 && w.Weight == nil {
		return input.Invalid("missing_limits", "limits", "give limits: a list of the key's own limits, or null to clear them (or a weight alone, to keep them)")
	}
	*k = KeyLimit{Key: w.Key, Weight: w.Weight}
	if len(w.Limits) == 0 || string(w.Limits) == "null" {
		return nil
	}
	// The key's limits read as a queue's key_limits do.
	var u slot.ConfigUpdate
	if err := u.UnmarshalJSON(append(append([]byte(`{"key_limits":`), w.Limits...), '}')); err != nil {
		var in *input.Error
		if errors.As(err, &in) {
			if rest, ok := strings.CutPrefix(in.Field, "key_limits"); ok {
				return input.Invalid(in.Code, "limits"+rest, in.Message)
			}
		}
		return err
	}
	k.Limits = *u.KeyLimits
	return nil
}

// Response is the answer of one operation, api.AdminResponse: the fields
// the operation fills, or an error object. The engine's records that keep
// more than the wire shows are answered through their converters
// (engine.Queue.API, slot.State.API); job.Job, engine.ResumeReport and
// the others are defined by their api types, and engine.Stats,
// engine.Reslot and engine.Schedule are them. Activity is, for stats,
// what the queue did over the last metrics.DefaultWindow (CloudWatch on
// the stack, the process's own tally locally); Keys answers list_keys (at most
// engine.MaxKeysListed, busiest first) and set_key_limits; Starts the
// worker's log on the stack (the process's own starts locally).
type Response = api.AdminResponse

// Ops lists the operations, for the error message of an unknown one.
var Ops = append([]string{"create", "configure", "pause", "resume", "purge", "delete", "stats", "starts", "get", "cancel", "list", "retry", "redrive", "list_keys", "get_key", "set_key_limits", "reindex"}, ScheduleOps...)

// Handler translates admin requests into engine calls.
type Handler struct {
	Engine Admin
	// Defaults fill the fields a create request leaves out, before slot's
	// own defaults: the stack's default limit (its interval, or its limit
	// in another form, taken whole by a request that gives no limit) and
	// allowed targets.
	Defaults slot.Config
	// Activity, if set, adds each queue's recent activity to stats.
	Activity metrics.ActivityReader
	// DeadLetters is the slot queue's dead-letter queue, which redrive
	// reads; nil: redrive answers no_dead_letter_queue.
	DeadLetters engine.DeadLetterQueue
	// Starts reads a queue's recent starts for starts; nil: starts
	// answers an empty list with starts_error.
	Starts startlog.Reader
	// Now is the clock of starts' window. Default time.Now.
	Now func() time.Time
}

// Handle decodes the request strictly and runs its operation. Bad input,
// and a queue or job that does not exist, answer {"error":{…}}; other
// failures are returned as errors (a function error).
func (h *Handler) Handle(ctx context.Context, payload json.RawMessage) (Response, error) {
	var r Request
	if err := job.Decode(payload, &r); err != nil {
		return failed(err)
	}
	res, err := h.do(ctx, r)
	if err != nil {
		return failed(err)
	}
	res.Op = r.Op
	return res, nil
}

// OpFields lists, per op, the request fields (by JSON name) it reads
// besides op: any other field given is refused (unusedField), so that a
// request never does something other than what it seems to ask, such as
// a reindex "of one queue" that reindexes all. The published schema of
// the admin request gives each op these fields.
var OpFields = map[string][]string{
	"create":         {"queue", "config"},
	"configure":      {"queue", "config", "reset"},
	"pause":          {"queue", "until"},
	"resume":         {"queue"},
	"purge":          {"queue"},
	"delete":         {"queue"},
	"stats":          {"queue", "no_activity"},
	"starts":         {"queue", "since", "limit"},
	"get":            {"queue", "job_id"},
	"cancel":         {"queue", "job_id"},
	"list":           {"queue", "status", "after", "limit"},
	"retry":          {"queue", "job_id", "job_ids", "failed", "after", "up_to", "limit", "by"},
	"redrive":        {"queue", "limit"},
	"list_keys":      {"queue"},
	"get_key":        {"queue", "key"},
	"set_key_limits": {"queue", "keys"},
	"reindex":        {},

	"create_schedule": {"queue", "name", "schedule"},
	"list_schedules":  {"queue"},
	"get_schedule":    {"queue", "name"},
	"pause_schedule":  {"queue", "name"},
	"resume_schedule": {"queue", "name"},
	"delete_schedule": {"queue", "name"},
}

// unusedField refuses a field r's op does not read: a typed error naming
// it, before anything is written.
func unusedField(r Request) error {
	used, ok := OpFields[r.Op]
	if !ok {
		return nil // an unknown op is refused by do
	}
	v := reflect.ValueOf(r)
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if name == "op" || v.Field(i).IsZero() || slices.Contains(used, name) {
			continue
		}
		return input.Invalid("unused_field", name, fmt.Sprintf("%s is not a field of op %s, which reads %v", name, r.Op, used))
	}
	return nil
}

// noLimit reports whether c gives its limit in no form: a create that
// gives one (a rate, say) keeps it alone, without the stack's default
// interval beside it, and one that gives a burst alone is refused for
// it (burst goes with a rate).
func noLimit(c slot.Config) bool {
	return c.Interval == 0 && c.Rate.IsZero() && c.Burst == 0 && c.Window.IsZero() && len(c.Limits) == 0
}

func (h *Handler) do(ctx context.Context, r Request) (Response, error) {
	if err := unusedField(r); err != nil {
		return Response{}, err
	}
	switch r.Op {
	case "create":
		var cfg slot.Config
		if r.Config != nil {
			cfg = r.Config.Apply(cfg)
		}
		if noLimit(cfg) {
			d := h.Defaults
			cfg.Interval, cfg.Rate, cfg.Burst, cfg.Window, cfg.Limits = d.Interval, d.Rate, d.Burst, d.Window, d.Limits
		}
		if cfg.Targets == nil {
			cfg.Targets = h.Defaults.Targets
		}
		q, err := h.Engine.CreateQueue(ctx, r.Queue, cfg)
		return Response{Queue: ptr(q.API())}, err
	case "configure":
		if r.Config == nil {
			return Response{}, input.Invalid("missing_config", "config", "configure needs a config object with the settings to change")
		}
		if r.Reset {
			q, rep, err := h.Engine.Reconfigure(ctx, r.Queue, r.Config.Apply(slot.Config{}))
			return Response{Queue: ptr(q.API()), Reslot: ptr(rep)}, err
		}
		q, rep, err := h.Engine.Change(ctx, r.Queue, *r.Config)
		return Response{Queue: ptr(q.API()), Reslot: ptr(rep)}, err
	case "pause":
		var until time.Time
		if r.Until != nil {
			until = *r.Until
		}
		st, err := h.Engine.Pause(ctx, r.Queue, until)
		return Response{State: ptr(st.API())}, err
	case "resume":
		rep, err := h.Engine.Unpause(ctx, r.Queue)
		return Response{Report: ptr(api.ResumeReport(rep))}, err
	case "purge":
		n, err := h.Engine.Purge(ctx, r.Queue)
		return Response{Cancelled: &n}, err
	case "delete":
		n, err := h.Engine.DeleteQueue(ctx, r.Queue)
		return Response{Cancelled: &n}, err
	case "stats":
		s, err := h.Engine.Stats(ctx, r.Queue)
		if err != nil || h.Activity == nil || r.NoActivity {
			return Response{Stats: &s}, err
		}
		res := Response{Stats: &s}
		// The counters answer without the metrics: a failed read
		// is reported, not fatal.
		if a, err := h.Activity.Activity(ctx, r.Queue, metrics.DefaultWindow); err != nil {
			res.ActivityError = err.Error()
		} else {
			res.Activity = &a
		}
		return res, nil
	case "starts":
		return h.starts(ctx, r)
	case "get":
		j, err := h.Engine.Job(ctx, job.Ref{Queue: r.Queue, ID: r.JobID})
		return Response{Job: j.API()}, err
	case "cancel":
		j, err := h.Engine.CancelJob(ctx, job.Ref{Queue: r.Queue, ID: r.JobID})
		return Response{Job: j.API()}, err
	case "retry":
		if r.JobID != "" {
			return Response{}, input.Invalid("invalid_retry", "job_id", "retry names its jobs in job_ids (a list)")
		}
		res, err := h.Engine.Retry(ctx, engine.RetryRequest{
			Queue: r.Queue, IDs: r.JobIDs, Failed: r.Failed, After: r.After, UpTo: r.UpTo, Limit: r.Limit, By: r.By,
		})
		return Response{Retried: &res}, err
	case "redrive":
		if r.Queue != "" {
			return Response{}, input.Invalid("invalid_redrive", "queue", "redrive works on the stack's dead-letter queue, which holds every queue's messages: give no queue")
		}
		rep, err := h.Engine.Redrive(ctx, h.DeadLetters, r.Limit)
		return Response{Redrive: &rep}, err
	case "list":
		if r.Queue == "" {
			qs, err := h.Engine.Queues(ctx)
			return Response{Queues: nonNil(each(qs, engine.Queue.API))}, err
		}
		if r.Status == "" {
			r.Status = job.Parked
		}
		jobs, err := h.Engine.Jobs(ctx, engine.ListRequest{Queue: r.Queue, Status: r.Status, After: r.After, Limit: r.Limit})
		return Response{Jobs: nonNil(each(jobs, func(j job.Job) api.Job { return api.Job(j) }))}, err
	case "list_keys":
		keys, err := h.Engine.Keys(ctx, r.Queue)
		return Response{Keys: nonNil(keys)}, err
	case "get_key":
		k, err := h.Engine.Key(ctx, r.Queue, r.Key)
		return Response{Key: &k}, err
	case "set_key_limits":
		keys, err := h.Engine.SetKeyLimits(ctx, r.Queue, each(r.Keys, func(k KeyLimit) engine.KeyLimit { return engine.KeyLimit(k) }))
		return Response{Keys: nonNil(keys)}, err
	case "reindex":
		rep, err := h.Engine.Reindex(ctx)
		return Response{Reindexed: &rep}, err
	}
	if slices.Contains(ScheduleOps, r.Op) {
		return h.schedule(ctx, r)
	}
	return Response{}, input.Invalid("invalid_op", "op", fmt.Sprintf("op %q is not one of %v", r.Op, Ops))
}

// starts answers a queue's recent starts. The queue's record is read
// only to check it exists: the starts come from the worker's log (or the
// process's ring), so the op writes nothing and adds nothing per job.
func (h *Handler) starts(ctx context.Context, r Request) (Response, error) {
	now := time.Now()
	if h.Now != nil {
		now = h.Now()
	}
	since := now.Add(-DefaultStartsWindow)
	if r.Since != nil {
		since = *r.Since
		if now.Sub(since) > MaxStartsWindow+time.Minute {
			return Response{}, input.Invalid("invalid_since", "since",
				fmt.Sprintf("since must lie within the last %s: starts are read from the worker's recent log", MaxStartsWindow))
		}
	}
	limit := r.Limit
	if limit < 0 || limit > MaxStartsLimit {
		return Response{}, input.Invalid("invalid_limit", "limit",
			fmt.Sprintf("limit must be between 0 (the default, %d) and %d", DefaultStartsLimit, MaxStartsLimit))
	}
	if limit == 0 {
		limit = DefaultStartsLimit
	}
	q, err := h.Engine.Queue(ctx, r.Queue)
	if err != nil {
		return Response{}, err
	}
	// A queue deleted and created again under its name starts afresh:
	// the log's starts before its creation are the old queue's.
	if since.Before(q.CreatedAt) {
		since = q.CreatedAt
	}
	res := Response{Starts: []startlog.Start{}}
	if h.Starts == nil {
		res.StartsError = "no source of starts: the admin function has no worker log group (" + lambdafn.EnvWorkerLogGroup + ")"
		return res, nil
	}
	// The queue exists without its starts: a failed read is reported,
	// not fatal, as stats' activity.
	starts, more, err := h.Starts.Starts(ctx, r.Queue, since, limit)
	if err != nil {
		res.StartsError = err.Error()
		return res, nil
	}
	res.Starts, res.More = nonNil(starts), more
	return res, nil
}

// each maps s by f, nil to nil.
func each[T, U any](s []T, f func(T) U) []U {
	if s == nil {
		return nil
	}
	out := make([]U, len(s))
	for i, v := range s {
		out[i] = f(v)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func failed(err error) (Response, error) {
	if e := lambdafn.ErrorOf(err); e != nil {
		return Response{Error: e}, nil
	}
	return Response{}, err
}
