package api

import (
	"encoding/json"
	"reflect"
	"time"
)

// Config is a queue's configuration. A zero setting means its default
// (the stack's, else slotq's): it is left out of the JSON, and the admin
// function fills it. docs/guarantees.md states the rules each setting
// keeps; docs/usage.md's configuration table gives ranges and defaults.
type Config struct {
	// Interval is the least time between two starts of the queue: the
	// interval form of its limit, the default form. Rate (with Burst) and
	// Window give the queue's limit in another form instead, and Limits
	// gives up to three limits, all kept at once (see Limit). A queue
	// gives at most one of Interval, Rate, Window and Limits.
	Interval time.Duration
	Rate     Rate
	Burst    int
	Window   Rate
	Limits   []Limit
	// Skew is the one-time allowance for clocks and wake-ups: for any
	// two starts i < j, start_j − start_i ≥ (j − i)·Interval − Skew. At
	// most a quarter of Interval; give 1ns for none (zero is the default).
	Skew time.Duration
	// MaxAttempts is how many attempts a job gets. Default 3.
	MaxAttempts int
	// Backoff is the delay before the first retry, doubled on each
	// further attempt, capped by MaxBackoff. Defaults 1s and 5m.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Retention is how long finished jobs are kept. Default 7 days.
	Retention time.Duration
	// Targets lists the HTTP and Lambda targets the queue's jobs may
	// name (at most 64 patterns); Go handlers (job kinds) are always
	// allowed. An HTTP pattern is matched against the parsed URL, never as
	// a string prefix: "SCHEME://HOST[:PORT][/PATH][*]" with SCHEME http
	// or https; HOST a DNS name, "*.DOMAIN" (any subdomain), "*" (any
	// host) or an IP address; PORT a number or "*" (absent: the scheme's
	// default); PATH exact, or a prefix when the pattern ends in "*"; no
	// path allows every path. A Lambda pattern is "lambda:NAME[:QUALIFIER]",
	// a function ARN, or either ending in "*" after a non-empty name
	// prefix. "*" alone is no pattern. Default none.
	Targets []string
	// AllowNetworks lists address prefixes (CIDR, such as "10.1.0.0/16";
	// at most 32) that the queue's HTTP targets may reach although they
	// are loopback, private, link-local, unique-local, metadata,
	// unspecified, multicast or reserved; it is checked at enqueue and on
	// every resolved address as the worker connects. An IPv6 address that
	// carries an IPv4 address (::ffff:a.b.c.d, NAT64, 6to4, Teredo) is
	// judged by that IPv4 address, so an IPv4 prefix allows it. Default
	// none: public addresses only.
	AllowNetworks []string
	// TargetTimeout bounds one run of an HTTP or Lambda target. Default
	// 30s.
	TargetTimeout time.Duration
	// MaxRunning caps how many attempts run at once; 0 is no cap.
	MaxRunning int
	// KeyLimits give every key of the queue's jobs a limit of its own (up
	// to three, each in any form of Limit), kept beside the queue's: a
	// key's starts keep the key's limits and all starts keep the queue's.
	// A named key may have limits of its own instead (the admin's
	// set_key_limits). None by default.
	KeyLimits []Limit
	// KeyMaxRunning is how many jobs of one key run at once, 1 to 100: 0
	// means the default, one at a time; NoKeyCap means no cap (on the wire,
	// "key_max_running": 0), for a queue whose keys' limits alone space
	// their jobs.
	KeyMaxRunning int
	// MaxSlowDowns bounds how often one job's target may answer "slow
	// down" (an HTTP 429, target.RetryAfter): past it the job fails with
	// the last answer. Default 20.
	MaxSlowDowns int
	// RetryAfterDefault is the slow-down of an answer that names no time
	// (an HTTP 429 or 503 without Retry-After). Default 1s.
	RetryAfterDefault time.Duration
	// BookAhead bounds how many of the queue's jobs hold a slot at once
	// (booked, not yet started), and KeyBookAhead how many of one key's
	// jobs do; 1 to MaxBookAhead each, 0 (left out) for no bound. A job
	// beyond a bound waits, accepted, for its booking: highest Priority
	// first, then round-robin across keys by their weight, then ticket
	// order. A booked job keeps its slot whatever comes after it; a
	// change of a bound applies to bookings after it and moves nothing
	// booked.
	BookAhead    int
	KeyBookAhead int
	// BatchMax is how many jobs one start of the queue may carry, 1 to
	// MaxBatchSize: jobs due within BatchWait of each other start
	// together, up to BatchMax, as one start against the queue's limit,
	// and their target receives them in one call, answering per job.
	// 0 (left out) or 1 is one job a start.
	BatchMax int
	// BatchWait is how long the first job of a batch waits for more,
	// at most the least time between two starts the queue's limit
	// allows on average; 0 starts a batch as soon as its limit allows.
	BatchWait time.Duration
}

// MaxBatchSize is the highest BatchMax.
const MaxBatchSize = 100

// MaxBookAhead is the highest BookAhead and KeyBookAhead. A queue's
// bookings (about 135 bytes each with UUID-sized ids and keys) are kept
// in pages of 16 on DynamoDB, so no item's size bounds how many a queue
// holds at once (its BookAhead, or KeyBookAhead times the keys booking at
// once).
const MaxBookAhead = 2000

// NoKeyCap is the KeyMaxRunning of a queue that lets a key run any number
// of its jobs at once: "key_max_running": 0 on the wire.
const NoKeyCap = -1

// ConfigUpdate changes a queue's configuration: each setting it gives
// (non-nil) replaces the queue's, each it leaves nil keeps the queue's.
// Zero is refused where it is not a setting of its own (MaxRunning 0 is
// no cap, an empty Targets list is none).
//
// An update that gives any of Interval, Rate, Window or Limits replaces
// the queue's limit whole (the forms it leaves out are cleared); one that
// gives Burst alone changes the burst of the queue's rate.
//
// Its fields are Config's, each as a pointer, in the same order (a test
// holds the two together), and their tags are the settings' names on the
// wire: Config and ConfigUpdate both travel in this form, durations as
// strings ("500ms").
type ConfigUpdate struct {
	Interval      *time.Duration `json:"interval,omitempty"`
	Rate          *Rate          `json:"rate,omitempty"`
	Burst         *int           `json:"burst,omitempty"`
	Window        *Rate          `json:"window,omitempty"`
	Limits        *[]Limit       `json:"limits,omitempty"`
	Skew          *time.Duration `json:"skew,omitempty"`
	MaxAttempts   *int           `json:"max_attempts,omitempty"`
	Backoff       *time.Duration `json:"backoff,omitempty"`
	MaxBackoff    *time.Duration `json:"max_backoff,omitempty"`
	Retention     *time.Duration `json:"retention,omitempty"`
	Targets       *[]string      `json:"targets,omitempty"`
	AllowNetworks *[]string      `json:"allow_networks,omitempty"`
	TargetTimeout *time.Duration `json:"target_timeout,omitempty"`
	MaxRunning    *int           `json:"max_running,omitempty"`
	KeyLimits     *[]Limit       `json:"key_limits,omitempty"`
	KeyMaxRunning *int           `json:"key_max_running,omitempty"`
	// MaxSlowDowns and RetryAfterDefault: see Config.
	MaxSlowDowns      *int           `json:"max_slow_downs,omitempty"`
	RetryAfterDefault *time.Duration `json:"retry_after_default,omitempty"`
	// BookAhead and KeyBookAhead: see Config.
	BookAhead    *int `json:"book_ahead,omitempty"`
	KeyBookAhead *int `json:"key_book_ahead,omitempty"`
	// BatchMax and BatchWait: see Config.
	BatchMax  *int           `json:"batch_max,omitempty"`
	BatchWait *time.Duration `json:"batch_wait,omitempty"`
}

// Update is the update that gives every setting of c that is not zero (a
// nil list is not given; an empty one is).
func (c Config) Update() ConfigUpdate {
	var u ConfigUpdate
	cv, uv := reflect.ValueOf(c), reflect.ValueOf(&u).Elem()
	for i := range cv.NumField() {
		if f := cv.Field(i); !f.IsZero() {
			p := reflect.New(f.Type())
			p.Elem().Set(f)
			uv.Field(i).Set(p)
		}
	}
	return u
}

// Apply returns c with the settings u gives. Any of Interval, Rate,
// Window and Limits replaces c's limit whole.
func (u ConfigUpdate) Apply(c Config) Config {
	if u.Interval != nil || u.Rate != nil || u.Window != nil || u.Limits != nil {
		c.Interval, c.Rate, c.Burst, c.Window, c.Limits = 0, Rate{}, 0, Rate{}, nil
	}
	cv, uv := reflect.ValueOf(&c).Elem(), reflect.ValueOf(u)
	for i := range uv.NumField() {
		if p := uv.Field(i); !p.IsNil() {
			cv.Field(i).Set(p.Elem())
		}
	}
	return c
}

// MarshalJSON writes durations as strings and leaves zero settings out.
func (c Config) MarshalJSON() ([]byte, error) {
	u := c.Update()
	if len(c.Targets) == 0 {
		u.Targets = nil
	}
	if len(c.AllowNetworks) == 0 {
		u.AllowNetworks = nil
	}
	if len(c.Limits) == 0 {
		u.Limits = nil
	}
	if len(c.KeyLimits) == 0 {
		u.KeyLimits = nil
	}
	return u.MarshalJSON()
}

// UnmarshalJSON reads a configuration; a setting left out is zero.
func (c *Config) UnmarshalJSON(b []byte) error {
	var u ConfigUpdate
	if err := u.UnmarshalJSON(b); err != nil {
		return err
	}
	*c = u.Apply(Config{})
	return nil
}

// configWire is ConfigUpdate's form on the wire: its fields and tags,
// with Duration for time.Duration (a string with its unit).
var configWire = wireOf(reflect.TypeFor[ConfigUpdate](), map[reflect.Type]reflect.Type{
	reflect.TypeFor[*time.Duration](): reflect.TypeFor[*Duration](),
})

// wireOf is struct type t with each field whose type is a key of as
// given that type instead (same name, same tag): how a type with
// time.Duration fields is written with durations as strings. Each
// replacement must be convertible from and to the field's type.
func wireOf(t reflect.Type, as map[reflect.Type]reflect.Type) reflect.Type {
	fields := make([]reflect.StructField, t.NumField())
	for i := range fields {
		f := t.Field(i)
		if w, ok := as[f.Type]; ok {
			f.Type = w
		}
		fields[i] = reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag}
	}
	return reflect.StructOf(fields)
}

// MarshalJSON writes the settings u gives, durations as strings.
func (u ConfigUpdate) MarshalJSON() ([]byte, error) {
	u.KeyMaxRunning = keyCapOut(u.KeyMaxRunning)
	uv, w := reflect.ValueOf(u), reflect.New(configWire).Elem()
	for i := range uv.NumField() {
		w.Field(i).Set(uv.Field(i).Convert(configWire.Field(i).Type))
	}
	return json.Marshal(w.Interface())
}

// keyCapOut is KeyMaxRunning on the wire (NoKeyCap is 0 there), and
// keyCapIn reads it back.
func keyCapOut(n *int) *int {
	if n != nil && *n == NoKeyCap {
		z := 0
		return &z
	}
	return n
}

func keyCapIn(n *int) *int {
	if n != nil && *n == 0 {
		v := NoKeyCap
		return &v
	}
	return n
}

// UnmarshalJSON reads the settings an update gives.
func (u *ConfigUpdate) UnmarshalJSON(b []byte) error {
	w := reflect.New(configWire)
	if err := json.Unmarshal(b, w.Interface()); err != nil {
		return err
	}
	var v ConfigUpdate
	vv := reflect.ValueOf(&v).Elem()
	for i := range vv.NumField() {
		vv.Field(i).Set(w.Elem().Field(i).Convert(vv.Field(i).Type()))
	}
	v.KeyMaxRunning = keyCapIn(v.KeyMaxRunning)
	*u = v
	return nil
}
