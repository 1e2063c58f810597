package slot

import (
	"fmt"
	"slices"
	"time"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/pkg/api"
)

// A key's own limit. A queue may give every key of its jobs a limit of
// its own (Config.KeyLimits, overridden for a named key by
// Meter.Limits), kept beside the queue's: each key's starts keep the
// key's limit, and all starts keep the queue's. The key's side is kept
// on a Meter, one small record per key, apart from the queue's hot
// state; the rules below are plain functions of the meter and the time,
// as the gate's are, and every change of a meter is a compare-and-set on
// its Version.

// Bounds of keyed limits.
const (
	// MaxKeyOverrides is how many keys one call may give a limit of their
	// own (SetKeyLimits).
	MaxKeyOverrides = 100
	// MaxKeyRunning is the highest KeyMaxRunning: the key's lane keeps
	// every holder (about 50 bytes each), and each of its writes pays
	// for them.
	MaxKeyRunning = 100
	// NoKeyCap is the KeyMaxRunning of a queue whose keys may run any
	// number of jobs at once (on the wire, key_max_running 0): the key's
	// limit alone spaces them.
	NoKeyCap = api.NoKeyCap
)

// Meter is the limit state of one key of a queue: the key's starts, as
// the queue's state keeps its own (LastStart and Marks of State), the
// highest ticket of the key that started (State.Current), and the key's
// own limits when a caller gave it some (nil: the queue's KeyLimits).
type Meter struct {
	Queue string `json:"queue"`
	Key   string `json:"key"`
	// Gen is the generation of the queue the meter belongs to; a meter of
	// another generation counts as none (Fresh).
	Gen int64 `json:"gen,omitempty"`
	// Version moves on by one with each write; 0 is a meter not stored.
	Version int64 `json:"version"`
	// State holds the key's starts: LastStart, Marks and Current (the
	// highest ticket started). Its other fields are unused.
	State State `json:"state"`
	// Limits are the key's own limits, set by a caller for this key
	// (SetKeyLimits); nil follows the queue's KeyLimits.
	Limits Limits `json:"limits,omitempty"`
	// KeptUnder are the limits State's marks were kept under when the
	// meter was written (Under): empty for none, nil when not known (a
	// meter written before they were recorded, taken to be kept under
	// the limits it is read for). A meter's marks are matched to its
	// limits by position, so marks read under other limits than they
	// were kept under must be seeded for them first.
	KeptUnder Limits `json:"kept_under"`
	// Answered are the key's tickets answered "slow down" that have not
	// started again since (SlowDown): each keeps its place, and the
	// lowest of them is the one the key's other jobs wait for
	// (State.SlowTicket). At most one per job of the key running at once.
	Answered []int64 `json:"answered,omitempty"`
	// Weight is the key's weight in the queue's waiting room, set by a
	// caller (SetKeyLimits): the key is booked that many jobs each round
	// of the round-robin across keys; 0 is 1.
	Weight int `json:"weight,omitempty"`
}

// SlowDown returns m after a target answered ticket's job of the key
// "slow down until until", at now, its start's lease ending at hold
// (slot.SlowDown on its state): the key's other jobs wait for every
// ticket answered so, lowest first, until hold at the latest. Answers
// whose wait ended before now keep no place. answer names the answer, so
// that it is counted once (SlowDown).
func (m Meter) SlowDown(ticket int64, until, hold, now time.Time, answer string) Meter {
	if !now.Before(m.State.SlowHold) {
		m.Answered = nil
	}
	prev := m.State.SlowHold
	m.State = SlowDown(m.State, ticket, until, hold, answer)
	if !slices.Contains(m.Answered, ticket) {
		m.Answered = append(slices.Clone(m.Answered), ticket)
	}
	m.State.SlowTicket, m.State.SlowHold = slices.Min(m.Answered), later(later(prev, hold), m.State.SlowHold)
	return m
}

// Under returns m as a meter kept under limits ls from now on, skew being
// its queue's allowance: if its marks were kept under other limits (the
// key's own or its queue's key_limits changed since it was written),
// its state is seeded for ls (Seed), so that the key's starts before the
// change and the first after it keep the old limits, and those after it
// keep ls, counting the recent starts before — as a queue's state is
// seeded when its own limits change. A limit that stays keeps its marks.
// Every reader that may write the meter back reads it through Under.
func (m Meter) Under(ls Limits, skew time.Duration) Meter {
	if m.Version != 0 && m.KeptUnder != nil && len(ls) > 0 && m.KeptUnder.Signature() != ls.Signature() {
		m.State = Seed(m.State, m.KeptUnder, ls, skew)
	}
	m.KeptUnder = append(Limits{}, ls...)
	return m
}

// Fresh returns the meter as a new one of generation gen if it belongs to
// another generation (a deleted queue's): nothing of it counts but its
// identity and version.
func (m Meter) Fresh(gen int64) Meter {
	if m.Gen == gen {
		return m
	}
	return Meter{Queue: m.Queue, Key: m.Key, Gen: gen, Version: m.Version}
}

// LimitsOf returns the limits key keeps under c with meter m: the key's
// own (m.Limits) if it has some, else the queue's KeyLimits; nil when the
// key has no limit.
func (c Config) LimitsOf(m Meter) Limits {
	if len(m.Limits) > 0 {
		return m.Limits
	}
	return Limits(c.KeyLimits)
}

// Keyed reports whether c gives its keys limits of their own.
func (c Config) Keyed() bool { return len(c.KeyLimits) > 0 }

// KeyCap is how many jobs of one key may run at once under c: 1 (the
// default), up to MaxKeyRunning, or 0 for no cap (NoKeyCap).
func (c Config) KeyCap() int {
	switch {
	case c.KeyMaxRunning == NoKeyCap:
		return 0
	case c.KeyMaxRunning == 0:
		return 1
	}
	return c.KeyMaxRunning
}

// KeyVerdict is KeyGate's answer.
type KeyVerdict int

// KeyGate's answers.
const (
	// KeyStart: the key's limits let the start through; it is recorded.
	KeyStart KeyVerdict = iota
	// KeyEarly: the key's limits open later; try again then.
	KeyEarly
	// KeyOvertaken: a later ticket of the key started first; the job
	// takes a new ticket, so that the key's starts keep ticket order.
	KeyOvertaken
)

func (v KeyVerdict) String() string {
	switch v {
	case KeyStart:
		return "start"
	case KeyEarly:
		return "early"
	case KeyOvertaken:
		return "overtaken"
	}
	return "unknown"
}

// KeyGate is the key's side of a start: ticket of the key, whose start
// the queue's gate reserved at at, under the key's limits ls with skew.
// It returns the meter after the start (KeyStart), the time the key's
// limits open (KeyEarly), or KeyOvertaken when a later ticket of the key
// started already. The ticket that started last may start again (its
// worker died between the key's record and its claim, or its duplicate
// comes): a crash costs the key one more start's room, never a breach.
func KeyGate(m Meter, ticket int64, ls Limits, skew time.Duration, at time.Time) (Meter, KeyVerdict, time.Time) {
	return KeyGateBy(m, ticket, ls, skew, at, at)
}

// KeyGateBy is KeyGate for a start reserved at at whose worker may call
// its target until deadline: the key's marks record the deadline, as the
// queue's do (StartedBy), with skew the queue's.
func KeyGateBy(m Meter, ticket int64, ls Limits, skew time.Duration, at, deadline time.Time) (Meter, KeyVerdict, time.Time) {
	return keyGate(m, ticket, false, ls, skew, at, deadline)
}

// KeyResumeBy is KeyGateBy for a ticket that started on the key before
// and was answered "slow down" since: it started in ticket order then,
// and keeps its place after the wait, though later tickets of the key
// started meanwhile (a key that runs more than one job at once). It is
// never overtaken; the key's limits and slow-down hold it as any start.
func KeyResumeBy(m Meter, ticket int64, ls Limits, skew time.Duration, at, deadline time.Time) (Meter, KeyVerdict, time.Time) {
	return keyGate(m, ticket, true, ls, skew, at, deadline)
}

func keyGate(m Meter, ticket int64, resumed bool, ls Limits, skew time.Duration, at, deadline time.Time) (Meter, KeyVerdict, time.Time) {
	if ticket < m.State.Current && ticket != m.State.SlowTicket && !resumed {
		return m, KeyOvertaken, time.Time{}
	}
	if open := SlowOpen(m.State, ticket, at); at.Before(open) {
		return m, KeyEarly, open
	}
	if open := GateOpen(m.State, ls, skew); at.Before(open) {
		return m, KeyEarly, open
	}
	prev := m.State
	m.State = Answered(startedBy(m.State, ls, at, deadline, skew), ticket)
	m.Answered = slices.DeleteFunc(slices.Clone(m.Answered), func(t int64) bool { return t == ticket })
	switch {
	case len(m.Answered) == 0:
		m.Answered = nil
	case !at.Before(prev.SlowHold):
		m.Answered = nil // their wait is over: they kept no place
	case m.State.SlowTicket == 0:
		// The next answered ticket is the one the others wait for.
		m.State.SlowTicket, m.State.SlowHold = slices.Min(m.Answered), prev.SlowHold
	}
	if len(ls) == 0 {
		// A key with no limit (its meter keeps its order under a
		// key_max_running above one): its latest start, for Keep.
		m.State.LastStart = later(m.State.LastStart, deadline)
	}
	m.State.Current = max(m.State.Current, ticket)
	return m, KeyStart, time.Time{}
}

// KeyOpen is the earliest start the key's limits ls let through at meter
// m (skew taken off); zero when they hold nothing back.
func KeyOpen(m Meter, ls Limits, skew time.Duration) time.Time {
	return GateOpen(m.State, ls, skew)
}

// KeySlot is the earliest start of a job of the key with ahead jobs of
// the key before it, at now: the key's limits after ahead more starts,
// each at its opening. It is the key's own clock, which enqueue answers
// (with the queue's slot, whichever is later).
func KeySlot(m Meter, ls Limits, ahead int64, now time.Time) time.Time {
	s := m.State
	at := now
	for range min(ahead, 1000) {
		at = later(now, Opens(s, ls))
		s = started(s, ls, at)
	}
	at = later(now, Opens(s, ls))
	if ahead > 1000 {
		at = at.Add(time.Duration(ahead-1000) * tickOf(ls))
	}
	return at
}

// tickOf is the longest emission interval of ls: how far apart starts
// come on average once a backlog formed.
func tickOf(ls Limits) time.Duration {
	var t time.Duration
	for _, l := range ls {
		t = max(t, every(l))
	}
	return t
}

// MeterGrace is how long a meter is kept after it stops holding starts
// back: it still remembers the key's highest ticket started, which a
// lower ticket of the key that comes late (a delayed message) must meet
// to keep the key's starts in ticket order.
const MeterGrace = 24 * time.Hour

// Keep is when the store may drop meter m (zero: never): MeterGrace
// after the key's latest start by the longest period of its limits,
// when it holds nothing back any more. A meter with limits of its own is
// kept.
func (m Meter) Keep(ls Limits) time.Time {
	if len(m.Limits) > 0 || m.Weight > 0 {
		return time.Time{}
	}
	last := later(m.State.LastStart, m.State.SlowHold)
	for _, mk := range m.State.Marks {
		last = later(last, mk.Last)
	}
	var per time.Duration
	for _, l := range ls {
		p := every(l) * time.Duration(l.Burst+1)
		if !l.Window.IsZero() {
			p = l.Window.Per
		}
		per = max(per, p)
	}
	return last.Add(per + MeterGrace)
}

// validateKeyLimits checks c's KeyLimits and KeyMaxRunning.
func (c Config) validateKeyLimits() error {
	if len(c.KeyLimits) > MaxLimits {
		return input.Invalid("too_many_limits", "key_limits", fmt.Sprintf("%d limits; a key keeps at most %d at once", len(c.KeyLimits), MaxLimits))
	}
	for i, l := range c.KeyLimits {
		if err := ValidateLimit(l, fmt.Sprintf("key_limits[%d].", i)); err != nil {
			return err
		}
		if t := every(l); t <= c.Skew {
			return input.Invalid("invalid_limit", fmt.Sprintf("key_limits[%d]", i),
				fmt.Sprintf("%s allows a start every %s on average, not more than the queue's skew %s: the skew must be less than it", l, t, c.Skew))
		}
	}
	if c.KeyMaxRunning != NoKeyCap && (c.KeyMaxRunning < 0 || c.KeyMaxRunning > MaxKeyRunning) {
		return input.Invalid("invalid_key_max_running", "key_max_running",
			fmt.Sprintf("key_max_running must be 1 to %d jobs of a key at once (1, one at a time, is the default) or 0 (no cap: the key's limit alone spaces its jobs)", MaxKeyRunning))
	}
	if c.KeyMaxRunning == NoKeyCap && !c.Keyed() {
		return input.Invalid("invalid_key_max_running", "key_max_running",
			"key_max_running 0 (no cap) needs a limit per key (key_rate, key_window, key_interval or key_limits): without one, a key has nothing to keep")
	}
	return nil
}

// ValidateKeyLimits checks the limits given to one key (the key's own,
// SetKeyLimits), naming a bad value under prefix (such as "keys[2].").
func ValidateKeyLimits(ls Limits, prefix string) error {
	if len(ls) > MaxLimits {
		return input.Invalid("too_many_limits", prefix+"limits", fmt.Sprintf("%d limits; a key keeps at most %d at once", len(ls), MaxLimits))
	}
	for i, l := range ls {
		if err := ValidateLimit(l, fmt.Sprintf("%slimits[%d].", prefix, i)); err != nil {
			return err
		}
	}
	return nil
}
