package slot

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/pkg/api"
)

// Limits and defaults of queue configuration.
const (
	// MaxNameLen is the longest queue name.
	MaxNameLen = 80

	// DefaultInterval is the interval of a queue created on first enqueue
	// when nothing else says otherwise.
	DefaultInterval = time.Second
	// DefaultSkew is the skew of a queue that sets none, on the embedded
	// runtime (the Lambda stack sets its own, template parameter
	// DefaultSkew): the wake-up latency of a timer on a loaded host, which
	// every start carries. With a skew below it, each start waits for the
	// one before it to have been late, and the lateness adds up along a
	// backlog; 2 ms covered it on a busy 2-core host (docs/algorithm.md).
	// It is capped at a quarter of the interval.
	DefaultSkew = 2 * time.Millisecond
	// DefaultMaxAttempts is how many attempts a job gets before it fails.
	DefaultMaxAttempts = 3
	// DefaultBackoff is the wait before the first retry; it doubles with
	// each attempt up to DefaultMaxBackoff.
	DefaultBackoff = time.Second
	// DefaultMaxBackoff caps the retry backoff.
	DefaultMaxBackoff = 5 * time.Minute
	// DefaultRetention is how long finished jobs and dead-letter records
	// are kept.
	DefaultRetention = 7 * 24 * time.Hour
	// DefaultTargetTimeout bounds one run of an HTTP or Lambda target.
	DefaultTargetTimeout = 30 * time.Second

	// MinInterval is the shortest interval a queue may have. Every start
	// writes the queue's state item, and one DynamoDB item takes about
	// 1,000 writes a second (enqueues write it too): a shorter interval
	// could not be kept, only promised.
	MinInterval = time.Millisecond
	// MaxInterval is the longest interval a queue may have.
	MaxInterval = 24 * time.Hour
	// MaxAttemptsLimit is the most attempts a queue may allow.
	MaxAttemptsLimit = 100
	// MaxRunningLimit is the highest MaxRunning: each running attempt of a
	// capped queue is an entry of about 20 bytes on its hot state item,
	// which every enqueue and start writes whole.
	MaxRunningLimit = 100
	// MaxBookAhead is the highest BookAhead and KeyBookAhead.
	MaxBookAhead = api.MaxBookAhead
	// MaxRetention is the longest retention.
	MaxRetention = 366 * 24 * time.Hour
)

// ValidateName reports whether name is a legal queue name
// ([A-Za-z0-9_.-]{1,80}).
func ValidateName(name string) error {
	if !api.ValidQueueName(name) {
		return input.Invalid("invalid_queue", "queue", fmt.Sprintf("queue name %q must match [A-Za-z0-9_.-]{1,80}", input.Truncate(name, 100)))
	}
	return nil
}

// Config is a queue's configuration: api.Config's settings (the type is
// defined by it, so a setting is declared once, in pkg/api, and its
// update and wire form follow from it). The zero value of each field
// means its documented default, applied by WithDefaults (MaxRunning's
// default is 0, no cap). In JSON a setting left out is its default, and
// one given as zero is refused (ZeroSetting), never read as the default.
//
// Each setting's range, default, what its zero means and its error are
// its Setting (Settings); the rules slotq keeps beyond them, beside
// api.Config's words:
//
//   - At most one of Interval, Rate, Window and Limits is given, and
//     Burst goes with Rate; the stack's limit is taken whole when none
//     is. Limits() reads them as one list.
//   - Skew is a one-time allowance, not one per start: no run of starts
//     goes faster than one per Interval. At most a quarter of the
//     interval (the default is cut to it), less than Interval.
//   - Targets are matched against the parsed target (ValidatePattern,
//     CheckTarget), never as a string prefix; Go handlers (job kinds)
//     registered in the worker are always allowed. AllowNetworks lists
//     prefixes that HTTP targets may reach although they are in a
//     refused class (AddrClass), checked on the target's IP host at
//     enqueue and on every resolved address when the worker connects, by
//     one rule (CheckAddr); a prefix made only of IPv6 addresses that
//     carry an IPv4 address is refused (list the IPv4 prefix).
//   - MaxRunning is checked in the same atomic step as the gate
//     (State.Running); a job that finds every place taken waits, parked,
//     until a finishing attempt hands it one.
//   - KeyLimits are kept beside the queue's; a key's own limits
//     (Meter.Limits) replace them for that key. KeyMaxRunning is KeyCap's;
//     NoKeyCap needs KeyLimits.
//   - A slow-down (attempt.RetryAfterError) is not a failed attempt.
type Config api.Config

// ZeroSetting says why a setting given explicitly as zero (field is its
// JSON name, such as "interval") is refused, or returns nil when zero is a
// setting of its own (max_running: no cap). Config's zero value means the
// default, so a zero that was meant would otherwise be silently read as
// "the default": decoding JSON and the CLI's flags ask this first.
func ZeroSetting(field string) *input.Error {
	if s, ok := settingNamed[field]; ok {
		return s.refusal()
	}
	return nil
}

// hasLimit reports whether c gives its limit in some form.
func (c Config) hasLimit() bool {
	return c.Interval != 0 || !c.Rate.IsZero() || c.Burst != 0 || !c.Window.IsZero() || len(c.Limits) > 0
}

// builtin holds the default of each setting that has one (Setting's
// Default: the Default constants); the others' zero is their default.
var builtin = func() Config {
	var c api.Config
	for _, s := range Settings {
		if s.Default != 0 {
			s.Set(&c, s.Default)
		}
	}
	return Config(c)
}()

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config { return c.Or(builtin) }

// Or returns c with every zero field taken from d: how a stack's defaults
// (say, its default interval and allowed targets) fill what a caller left
// out. The limit is taken whole (Interval, Rate, Burst, Window, Limits)
// when c gives none; d's Skew is cut to a quarter of c's tick.
func (c Config) Or(d Config) Config {
	if !c.hasLimit() {
		c.Interval, c.Rate, c.Burst, c.Window, c.Limits = d.Interval, d.Rate, d.Burst, d.Window, d.Limits
	}
	if c.Skew == 0 && d.Skew != 0 {
		c.Skew = min(d.Skew, c.Tick()/4)
	}
	// The others, where zero is not a setting of its own: a list left
	// nil, a number or a duration left zero.
	cv, dv := reflect.ValueOf(&c).Elem(), reflect.ValueOf(d)
	for _, s := range Settings {
		if f := cv.Field(s.index); !s.Limit && !s.ZeroGiven && s.Name != "skew" && f.IsZero() {
			f.Set(dv.Field(s.index))
		}
	}
	return c
}

// firstSettings are the settings slotq's first releases know (3461da3,
// and 436bcf3, the previous release: CHANGELOG.md). Those releases read
// a stored configuration strictly (a setting they do not know is an
// error) and fill no default on read: their engine uses max_attempts,
// retention and skew as stored.
var firstSettings = []string{"interval", "skew", "max_attempts", "backoff", "max_backoff", "retention",
	"targets", "allow_networks", "target_timeout", "max_running"}

// later reports whether s is a setting newer than firstSettings that has
// a default of its own: its stored form leaves it out at that default.
func (s Setting) later() bool {
	return s.scalar() && s.Default != 0 && !slices.Contains(firstSettings, s.Name)
}

// Stored is c as a store keeps it (JSON, as MarshalJSON writes it), so
// that an earlier release can read what this one stored, after a
// rollback or a downgrade, wherever the queue uses no setting newer than
// that release: firstSettings are stored whole, defaults included, as
// those releases stored and read them; every later setting only where
// it differs from its default (max_slow_downs at 20 is left out), which
// ReadStored fills back. A queue that gives a later setting, or a limit
// in a later form (rate, window, limits), is refused by releases that do
// not know it, by design: they never write back what they cannot read.
func (c Config) Stored() ([]byte, error) {
	a := (*api.Config)(&c)
	for _, s := range Settings {
		if s.later() && s.Get(*a) == s.Default {
			s.Set(a, 0)
		}
	}
	return c.MarshalJSON()
}

// ReadStored reads a configuration a store keeps: in the form Stored
// writes, or as earlier versions stored it (every setting with its
// default). A later setting left out takes its default (Stored).
func ReadStored(b []byte) (Config, error) {
	var c Config
	if err := c.UnmarshalJSON(b); err != nil {
		return Config{}, err
	}
	a := (*api.Config)(&c)
	for _, s := range Settings {
		if s.later() && s.Get(*a) == 0 {
			s.Set(a, s.Default)
		}
	}
	return c, nil
}

// Validate checks a configuration after defaults were applied.
func (c Config) Validate() error {
	if err := c.validateLimits(); err != nil {
		return err
	}
	if err := c.validateKeyLimits(); err != nil {
		return err
	}
	if c.Skew < 0 || c.Skew >= c.Tick() {
		return input.Invalid("invalid_skew", "skew", fmt.Sprintf("skew must be at least 0 and less than %s, the shortest time between two starts the queue's limit allows on average", c.Tick()))
	}
	// The other numbers and durations, by their Setting's range.
	for _, s := range Settings {
		if err := s.invalid(c); err != nil {
			return err
		}
	}
	if err := c.validateBatch(); err != nil {
		return err
	}
	if len(c.Targets) > MaxTargetPatterns {
		return input.Invalid("too_many_targets", "targets", fmt.Sprintf("%d target patterns; the most is %d", len(c.Targets), MaxTargetPatterns))
	}
	for i, t := range c.Targets {
		if err := ValidatePattern(t); err != nil {
			return input.Invalid("invalid_target", fmt.Sprintf("targets[%d]", i), fmt.Sprintf("pattern %q: %v", input.Truncate(t, 100), err))
		}
	}
	if len(c.AllowNetworks) > MaxAllowNetworks {
		return input.Invalid("too_many_networks", "allow_networks", fmt.Sprintf("%d networks; the most is %d", len(c.AllowNetworks), MaxAllowNetworks))
	}
	for i, n := range c.AllowNetworks {
		p, err := netip.ParsePrefix(n)
		if err != nil || p != p.Masked() {
			return input.Invalid("invalid_network", fmt.Sprintf("allow_networks[%d]", i), fmt.Sprintf("%q is not a network prefix such as \"10.1.0.0/16\" (host bits zero)", input.Truncate(n, 100)))
		}
		if carriesIPv4(p) {
			return input.Invalid("invalid_network", fmt.Sprintf("allow_networks[%d]", i), fmt.Sprintf("%s holds IPv6 addresses that carry an IPv4 address, which are judged by that IPv4 address: list an IPv4 prefix instead", p))
		}
	}
	return nil
}

// Allows reports whether the queue allows target: CheckTarget finds
// nothing wrong with it.
func (c Config) Allows(target string) bool { return c.CheckTarget(target) == nil }

// CheckTarget says why the queue does not allow target, or returns nil:
// the target is malformed, matches none of Targets, or names by IP literal
// (or "localhost") an address CheckAddr refuses. An HTTP target named by a
// DNS name is checked again when the worker connects, after resolution.
func (c Config) CheckTarget(target string) error {
	t, err := ParseTarget(target)
	if err != nil {
		return err
	}
	matched := false
	for _, p := range c.Targets {
		if pat, err := parsePattern(p); err == nil && pat.match(t) {
			matched = true
			break
		}
	}
	if !matched {
		return errors.New("it matches none of the queue's allowed targets")
	}
	if t.URL == nil {
		return nil
	}
	a, err := netip.ParseAddr(t.Host)
	if t.Host == "localhost" || strings.HasSuffix(t.Host, ".localhost") {
		a, err = netip.AddrFrom4([4]byte{127, 0, 0, 1}), nil
	}
	if err != nil {
		return nil
	}
	return c.CheckAddr(a)
}

// CheckAddr says why an HTTP target of the queue may not connect to a, or
// returns nil: a is in a refused class (AddrClass) and in none of
// AllowNetworks. Both are asked of the address a is judged by
// (JudgedAddr): an IPv6 address that carries an IPv4 address is judged by
// that IPv4 address before any prefix applies, so "::/0" does not allow
// ::ffff:127.0.0.1, and "127.0.0.1/32" does. The enqueue check
// (CheckTarget) and the worker's dial-time check both call it.
func (c Config) CheckAddr(a netip.Addr) error {
	class := AddrClass(a)
	if class == "" {
		return nil
	}
	j := JudgedAddr(a)
	for _, n := range c.AllowNetworks {
		if p, err := netip.ParsePrefix(n); err == nil && p.Contains(j) {
			return nil
		}
	}
	if j != a.WithZone("") {
		return fmt.Errorf("address %s is %s (it carries %s); the queue's allow_networks must list %s", a.WithZone(""), class, j, j)
	}
	return fmt.Errorf("address %s is %s; the queue's allow_networks must list it", j, class)
}

// RetryDelay is the backoff before attempt number next (2, 3, …).
func (c Config) RetryDelay(next int) time.Duration {
	d := c.Backoff
	for i := 2; i < next && d < c.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, c.MaxBackoff)
}
