package api

import "time"

// The admin function's operations (AdminRequest.Op).
const (
	OpCreate    = "create"
	OpConfigure = "configure"
	OpPause     = "pause"
	OpResume    = "resume"
	OpPurge     = "purge"
	OpDelete    = "delete"
	OpStats     = "stats"
	OpGet       = "get"
	OpCancel    = "cancel"
	OpList      = "list"
	OpRetry     = "retry"
	OpRedrive   = "redrive"
	OpReindex   = "reindex"
	OpStarts    = "starts"
	// Keys: a queue's keys with jobs, one key, keys' own limits.
	OpListKeys     = "list_keys"
	OpGetKey       = "get_key"
	OpSetKeyLimits = "set_key_limits"
)

// MaxKeyOverrides is how many keys one set_key_limits call names.
const MaxKeyOverrides = 100

// AdminRequest is one operation of the admin function. Each operation
// reads the fields its own documentation names and leaves the others
// empty.
type AdminRequest struct {
	Op    string `json:"op"`
	Queue string `json:"queue,omitempty"`
	// Config holds create's and configure's settings; Reset makes
	// configure give the settings Config leaves out their defaults.
	Config *ConfigUpdate `json:"config,omitempty"`
	Reset  bool          `json:"reset,omitempty"`
	// NoActivity, for stats, leaves the recent activity out: no metrics
	// are read.
	NoActivity bool `json:"no_activity,omitempty"`
	// Until, for pause, lifts the pause then.
	Until *time.Time `json:"until,omitempty"`
	// JobID names the job of get and cancel.
	JobID string `json:"job_id,omitempty"`
	// Since, for starts, is the time the starts listed begin at
	// (default: 15 minutes ago; at most an hour ago).
	Since *time.Time `json:"since,omitempty"`
	// Status, After and Limit page through list (parked or failed jobs
	// by ticket, after ticket After); Limit also caps redrive, retry and
	// starts.
	Status Status `json:"status,omitempty"`
	After  int64  `json:"after,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	// JobIDs names the jobs retry runs again, or Failed runs again a
	// page of failed jobs with tickets in (After, UpTo]. By says who
	// asked, for the jobs' histories.
	JobIDs []string `json:"job_ids,omitempty"`
	Failed bool     `json:"failed,omitempty"`
	UpTo   int64    `json:"up_to,omitempty"`
	By     string   `json:"by,omitempty"`
	// Name names the schedule of the schedule ops; Schedule is
	// create_schedule's rule and job.
	Name     string        `json:"name,omitempty"`
	Schedule *ScheduleSpec `json:"schedule,omitempty"`
	// Key names the key of get_key; Keys gives, for set_key_limits, each
	// key it names limits of its own or clears them (at most
	// MaxKeyOverrides keys).
	Key  string     `json:"key,omitempty"`
	Keys []KeyLimit `json:"keys,omitempty"`
}

// KeyLimit gives one key of a queue with key_limits limits of its own
// (up to three, each in any form of Limit), in place of the queue's
// key_limits for that key; Limits nil clears them (on the wire,
// "limits": null), so that the key follows the queue's again.
//
// Weight, given, sets the key's weight in the queue's waiting room: a
// key of weight w is booked w jobs each round of the round-robin across
// keys (1 to MaxWeight; a key never given one has weight 1). An entry
// that gives a weight may leave limits out: the key's limits stay as
// they are.
type KeyLimit struct {
	Key    string  `json:"key"`
	Limits []Limit `json:"limits"`
	Weight *int    `json:"weight,omitempty"`
}

// MaxWeight is the highest weight of a key (KeyLimit.Weight).
const MaxWeight = 1000

// KeyInfo is what one key of a queue shows (list_keys, get_key,
// set_key_limits).
type KeyInfo struct {
	Key string `json:"key"`
	// Limits are the key's limits; Own says they are its own (set for
	// this key), not the queue's key_limits.
	Limits []Limit `json:"limits,omitempty"`
	Own    bool    `json:"own,omitempty"`
	// Pending counts the key's accepted jobs that have not ended (an
	// upper bound); Held says one of them holds the key (it runs, or is
	// about to); Waiting counts those parked on the key.
	Pending int64 `json:"pending"`
	Held    bool  `json:"held,omitempty"`
	Waiting int   `json:"waiting,omitempty"`
	// NextStart is the earliest start the key's limits allow its next
	// job (zero: at once); AtLimit says it lies ahead while jobs wait.
	NextStart time.Time `json:"next_start,omitzero"`
	AtLimit   bool      `json:"at_limit,omitempty"`
	// LastStart is the key's latest start.
	LastStart time.Time `json:"last_start,omitzero"`
	// SlowUntil is when the key's slow-down ends (its target answered
	// "slow down"; a key with a limit of its own waits alone), and
	// SlowDowns counts those answers.
	SlowUntil time.Time `json:"slow_until,omitzero"`
	SlowDowns int64     `json:"slow_downs,omitempty"`
	// Weight is the key's weight in the waiting room, when it was given
	// one (KeyLimit.Weight); absent is 1.
	Weight int `json:"weight,omitempty"`
}

// AdminResponse is the admin function's answer: the fields its operation
// fills, or the refusal.
type AdminResponse struct {
	Op        string        `json:"op,omitempty"`
	Queue     *Queue        `json:"queue,omitempty"`
	State     *QueueState   `json:"state,omitempty"`
	Report    *ResumeReport `json:"report,omitempty"`
	Cancelled *int          `json:"cancelled,omitempty"`
	Stats     *Stats        `json:"stats,omitempty"`
	// Activity is, for stats, the queue's recent activity from its
	// metrics; ActivityError says why it is missing.
	Activity      *Activity      `json:"activity,omitempty"`
	ActivityError string         `json:"activity_error,omitempty"`
	Job           *Job           `json:"job,omitempty"`
	Retried       *RetryResult   `json:"retried,omitempty"`
	Redrive       *RedriveReport `json:"redrive,omitempty"`
	Reindexed     *ReindexReport `json:"reindexed,omitempty"`
	// Reslot answers configure: what the new limits did to the jobs
	// already booked.
	Reslot *Reslot `json:"reslot,omitempty"`
	Jobs   []Job   `json:"jobs,omitzero"`
	Queues []Queue `json:"queues,omitzero"`
	// Starts answers starts: the queue's starts from since on, by start
	// time; More says the answer stopped at its limit (ask again from
	// the last start's StartedAt). StartsError says why they are missing
	// when the worker's log could not be read.
	Starts      []Start `json:"starts,omitzero"`
	More        bool    `json:"more,omitempty"`
	StartsError string  `json:"starts_error,omitempty"`
	// Keys answers list_keys (the queue's keys with jobs waiting or
	// running, busiest first, at most 1000) and set_key_limits (each key
	// as set); Key answers get_key.
	Keys []KeyInfo `json:"keys,omitzero"`
	Key  *KeyInfo  `json:"key,omitempty"`
	// Schedule answers the schedule ops on one schedule, Schedules
	// list_schedules.
	Schedule  *Schedule  `json:"schedule,omitempty"`
	Schedules []Schedule `json:"schedules,omitzero"`
	Error     *Error     `json:"error,omitempty"`
}
