package dynamostore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A rollback (CloudFormation's UPDATE_ROLLBACK, or a team pinning an
// older commit) puts the previous release's code back on what this one
// wrote. The previous release is 436bcf3 (CHANGELOG.md); its readers are
// frozen below as that code read the table and the slot queue's
// messages — attribute by attribute, with its strict queue configuration
// and its waiting string — so that CI checks them on a clean clone
// without building old commits. What a queue that uses no newer setting
// writes must read whole under them; what a newer feature writes
// (a setting the old struct lacks, a lane's tail) is refused by them, as
// docs/deploy.md's rollback section says.

// oldConfigFields are the settings a release's strict configuration
// reader (input.Decode: an unknown field, in any letter case, is an
// error) knows: 436bcf3's struct, and 6bc214b's parent's (the last
// before max_slow_downs).
var oldConfigFields = map[string][]string{
	"436bcf3": {"interval", "skew", "max_attempts", "backoff", "max_backoff", "retention", "targets",
		"allow_networks", "target_timeout", "max_running"},
	"6bc214b^": {"interval", "rate", "burst", "window", "limits", "skew", "max_attempts", "backoff",
		"max_backoff", "retention", "targets", "allow_networks", "target_timeout", "max_running",
		"key_limits", "key_max_running"},
}

// oldConfig is a configuration as 436bcf3 reads it: no defaults applied
// on read (its engine uses MaxAttempts, Retention and Skew as read).
type oldConfig struct {
	Interval, Skew, Backoff, MaxBackoff, Retention, TargetTimeout time.Duration
	MaxAttempts, MaxRunning                                       int
	Targets, AllowNetworks                                        []string
}

// decodeOldConfig reads raw as release's strict reader does, and for
// 436bcf3 returns what it reads.
func decodeOldConfig(release, raw string) (oldConfig, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &fields); err != nil {
		return oldConfig{}, err
	}
	for name := range fields {
		if !slices.Contains(oldConfigFields[release], name) {
			return oldConfig{}, fmt.Errorf("%s: unknown field %q", name, name)
		}
	}
	var c oldConfig
	var err error
	dur := func(name string) time.Duration {
		v, ok := fields[name]
		if !ok || err != nil {
			return 0
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			d, e := time.ParseDuration(s)
			err = errors.Join(err, e)
			return d
		}
		var ms float64
		err = errors.Join(err, json.Unmarshal(v, &ms))
		return time.Duration(ms * float64(time.Millisecond))
	}
	into := func(name string, v any) {
		if x, ok := fields[name]; ok && err == nil {
			err = json.Unmarshal(x, v)
		}
	}
	c.Interval, c.Skew, c.Backoff, c.MaxBackoff = dur("interval"), dur("skew"), dur("backoff"), dur("max_backoff")
	c.Retention, c.TargetTimeout = dur("retention"), dur("target_timeout")
	into("max_attempts", &c.MaxAttempts)
	into("max_running", &c.MaxRunning)
	into("targets", &c.Targets)
	into("allow_networks", &c.AllowNetworks)
	return c, err
}

// oldRuns says why 436bcf3's engine, using c as read, would not run its
// queue as configured: its Validate, which the values it reads must pass
// (a zero MaxAttempts fails every job at its first error, a zero
// Retention expires it as it ends).
func (c oldConfig) oldRuns() error {
	switch {
	case c.Interval <= 0 || c.Interval > 24*time.Hour:
		return fmt.Errorf("interval %s", c.Interval)
	case c.Skew < 0 || c.Skew >= c.Interval:
		return fmt.Errorf("skew %s", c.Skew)
	case c.MaxAttempts < 1 || c.MaxAttempts > 100:
		return fmt.Errorf("max_attempts %d", c.MaxAttempts)
	case c.Backoff < 0 || c.MaxBackoff < c.Backoff:
		return fmt.Errorf("backoff %s, max_backoff %s", c.Backoff, c.MaxBackoff)
	case c.Retention < time.Minute:
		return fmt.Errorf("retention %s", c.Retention)
	case c.TargetTimeout <= 0 || c.TargetTimeout > 15*time.Minute:
		return fmt.Errorf("target_timeout %s", c.TargetTimeout)
	}
	return nil
}

// oldItem reads attributes as 436bcf3's item did: a wrong type is an
// error; the first error sticks.
type oldItem struct {
	m   map[string]types.AttributeValue
	err error
}

func (it *oldItem) fail(name string, err error) {
	if it.err == nil {
		it.err = fmt.Errorf("attribute %s: %w", name, err)
	}
}

// attr is attribute name of it as one of the types 436bcf3 took for it
// (want names them), and whether it is there; another type is an error.
func attr[T types.AttributeValue](it *oldItem, name, want string) (T, bool) {
	v, ok := it.m[name].(T)
	if _, there := it.m[name]; there && !ok {
		it.fail(name, fmt.Errorf("want %s, got %T", want, it.m[name]))
	}
	return v, ok
}

func (it *oldItem) str(name string) string {
	v, ok := attr[*types.AttributeValueMemberS](it, name, "a string")
	if !ok {
		return ""
	}
	return v.Value
}

func (it *oldItem) bool(name string) bool {
	v, ok := attr[*types.AttributeValueMemberBOOL](it, name, "a boolean")
	return ok && v.Value
}

// bytes reads a payload: a string, or binary where it is not UTF-8.
func (it *oldItem) bytes(name string) {
	if _, ok := it.m[name].(*types.AttributeValueMemberB); !ok {
		it.str(name)
	}
}

func (it *oldItem) int(name string) int64 {
	v, ok := attr[*types.AttributeValueMemberN](it, name, "a number")
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		it.fail(name, err)
	}
	return n
}

// ms reads a number of milliseconds, in any decimal notation, as
// nanoseconds (436bcf3's parseMs).
func (it *oldItem) ms(name string) int64 {
	v, ok := attr[*types.AttributeValueMemberN](it, name, "a number")
	if !ok {
		return 0
	}
	r, ok := new(big.Rat).SetString(v.Value)
	if !ok {
		it.fail(name, fmt.Errorf("bad number %q", v.Value))
		return 0
	}
	r.Mul(r, big.NewRat(1e6, 1))
	q := new(big.Int).Quo(r.Num(), r.Denom()) // below a nanosecond: toward zero
	if !q.IsInt64() {
		it.fail(name, fmt.Errorf("number %q out of range", v.Value))
	}
	return q.Int64()
}

// running reads the state item's map of ticket → lease end.
func (it *oldItem) running(name string) {
	v, ok := attr[*types.AttributeValueMemberM](it, name, "a map")
	if !ok {
		return
	}
	for k, x := range v.Value {
		if _, err := strconv.ParseInt(k, 10, 64); err != nil {
			it.fail(name, err)
		}
		sub := oldItem{m: map[string]types.AttributeValue{k: x}}
		sub.ms(k)
		if sub.err != nil {
			it.fail(name, sub.err)
		}
	}
}

// oldState is what 436bcf3 read of a queue's state item.
type oldState struct {
	Ticket, Current int64
	Interval        time.Duration
}

func decodeOldState(m map[string]types.AttributeValue) (oldState, error) {
	it := oldItem{m: m}
	s := oldState{Ticket: it.int("ticket"), Current: it.int("current"), Interval: time.Duration(it.ms("interval"))}
	it.ms("clock")
	it.ms("last_start")
	it.bool("paused")
	it.ms("paused_until")
	it.int("purged")
	it.running("running")
	return s, it.err
}

// oldJob is what 436bcf3's worker compares with a message (its
// job.Version) and its resume function acts on.
type oldJob struct {
	Queue, ID, Status, ParkReason, Lane string
	Gen, Ticket                         int64
	Attempt                             int
}

// oldStatuses and oldParkReasons are the values 436bcf3 knew.
var (
	oldStatuses    = []string{"queued", "parked", "running", "succeeded", "failed", "cancelled"}
	oldParkReasons = []string{"", "far", "paused", "unsent", "key", "max_running"}
)

func decodeOldJob(m map[string]types.AttributeValue) (oldJob, error) {
	it := oldItem{m: m}
	j := oldJob{
		Queue: it.str("queue"), ID: it.str("job_id"), Status: it.str("status"), ParkReason: it.str("park_reason"),
		Lane: it.str("lane_key"), Gen: it.int("gen"), Ticket: it.int("ticket"), Attempt: int(it.int("attempt")),
	}
	for _, s := range []string{"kind", "target", "last_error"} {
		it.str(s)
	}
	it.bytes("payload")
	for _, n := range []string{"retickets", "line_order", "history_dropped"} {
		it.int(n)
	}
	for _, t := range []string{"slot_at", "not_before", "due_at", "enqueued_at", "started_at", "finished_at", "expires_at"} {
		it.ms(t)
	}
	it.bool("scheduled")
	it.bool("detached")
	history := it.str("history")
	if it.err != nil {
		return j, it.err
	}
	// job.DecodeHistory: "code,ms,ticket,old ticket,attempt,lateness,delay,reason,error".
	for i, line := range strings.Split(history, "\n") {
		if history == "" {
			break
		}
		f := strings.SplitN(line, ",", 9)
		for k := 1; k < min(len(f), 7); k++ {
			if _, err := strconv.ParseInt(cmpOr(f[k], "0"), 10, 64); err != nil {
				return j, fmt.Errorf("decode history: event %d: %w", i, err)
			}
		}
	}
	if !slices.Contains(oldStatuses, j.Status) || !slices.Contains(oldParkReasons, j.ParkReason) {
		return j, fmt.Errorf("status %q, park reason %q: unknown to 436bcf3", j.Status, j.ParkReason)
	}
	return j, nil
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// decodeOldLane reads a lane item as 436bcf3 did: its waiters all
// inline, "ticket:id,ticket:id". It returns the job ids the lane holds
// and keeps waiting.
func decodeOldLane(m map[string]types.AttributeValue) ([]string, error) {
	it := oldItem{m: m}
	for _, n := range []string{"gen", "v", "holder_ticket", "last", "pending"} {
		it.int(n)
	}
	it.ms("until")
	holder, waiting := it.str("holder_id"), it.str("waiting")
	if sk := it.str("sk"); it.err == nil && !strings.HasPrefix(sk, "K#") {
		it.fail("sk", fmt.Errorf("%q is not a lane's", sk))
	}
	if it.err != nil {
		return nil, fmt.Errorf("decode lane: %w", it.err)
	}
	var ids []string
	if holder != "" {
		ids = append(ids, holder)
	}
	if waiting == "" {
		return ids, nil
	}
	for _, p := range strings.Split(waiting, ",") {
		t, id, ok := strings.Cut(p, ":")
		if _, err := strconv.ParseInt(t, 10, 64); !ok || err != nil || id == "" {
			return nil, fmt.Errorf("bad waiter %q", p)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// oldEnvelope is 436bcf3's job.Envelope, decoded as its DecodeEnvelope
// did.
type oldEnvelope struct {
	V       int    `json:"v"`
	Queue   string `json:"queue"`
	JobID   string `json:"job_id"`
	Ticket  int64  `json:"ticket"`
	Attempt int    `json:"attempt"`
	Gen     int64  `json:"gen,omitempty"`
}

func decodeOldEnvelope(body []byte) (oldEnvelope, error) {
	var e oldEnvelope
	if err := json.Unmarshal(body, &e); err != nil {
		return e, err
	}
	if e.V != 1 || e.Queue == "" || e.JobID == "" || e.Ticket < 1 || e.Attempt < 1 {
		return e, fmt.Errorf("envelope %s: version %d or a field missing", body, e.V)
	}
	return e, nil
}

// oldDueShard is 436bcf3's partition of the due index for the item of
// key pk, sk: its resume function queries D#00 … D#15 and the held
// partitions, H#<queue>#<gen>, and nothing else.
func oldDueShard(pk, sk string) string {
	h := fnv.New32a()
	h.Write([]byte(pk))
	h.Write([]byte{0})
	h.Write([]byte(sk))
	return fmt.Sprintf("D#%02d", h.Sum32()%16)
}
