package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// KeyInfo is what one key of a queue shows: its limits (its own or the
// queue's), its jobs waiting or running, and when its next start may come
// by its own limits (api.KeyInfo, the type users decode). Pending is the
// lane's count (slot.Lane.Pending), LastStart the latest start its meter
// holds, Weight slot.Meter.Weight.
type KeyInfo = api.KeyInfo

// MaxKeysListed is the most keys Keys returns in one answer, busiest first.
const MaxKeysListed = 1000

// Keys does Engine.Keys's work.
func (e *keyLanes) Keys(ctx context.Context, name string) ([]KeyInfo, error) {
	q, err := e.admin.Queue(ctx, name)
	if err != nil {
		return nil, err
	}
	lanes, err := e.state.ListLanes(ctx, q.Name)
	if err != nil {
		return nil, fmt.Errorf("keys %s: %w", name, err)
	}
	now := e.now()
	var out []KeyInfo
	for _, l := range lanes {
		if l.Key == "" || l.Gen != q.Gen || l.Pending <= 0 && !l.Held(now) && len(l.Waiting) == 0 {
			continue
		}
		out = append(out, KeyInfo{Key: l.Key, Pending: l.Pending, Held: l.Held(now), Waiting: len(l.Waiting)})
	}
	slices.SortFunc(out, func(a, b KeyInfo) int {
		if a.Pending != b.Pending {
			return int(b.Pending - a.Pending)
		}
		return strings.Compare(a.Key, b.Key)
	})
	if len(out) > MaxKeysListed {
		out = out[:MaxKeysListed]
	}
	for i := range out {
		if err := e.fillKey(ctx, q, &out[i], now); err != nil {
			return nil, fmt.Errorf("keys %s: %w", name, err)
		}
	}
	return out, nil
}

// Key does Engine.Key's work.
func (e *keyLanes) Key(ctx context.Context, name, key string) (KeyInfo, error) {
	if err := slot.ValidateKey("key", key); err != nil {
		return KeyInfo{}, err
	}
	q, err := e.admin.Queue(ctx, name)
	if err != nil {
		return KeyInfo{}, err
	}
	l, err := e.getLane(ctx, q, key)
	if err != nil {
		return KeyInfo{}, fmt.Errorf("key %s of %s: %w", key, name, err)
	}
	now := e.now()
	k := KeyInfo{Key: key, Pending: max(0, l.Pending), Held: l.Held(now), Waiting: len(l.Waiting)}
	if err := e.fillKey(ctx, q, &k, now); err != nil {
		return KeyInfo{}, fmt.Errorf("key %s of %s: %w", key, name, err)
	}
	return k, nil
}

// fillKey adds what k's meter says.
func (e *keyLanes) fillKey(ctx context.Context, q Queue, k *KeyInfo, now time.Time) error {
	m, err := e.readMeter(ctx, q, k.Key)
	if err != nil {
		return err
	}
	ls := q.Config.LimitsOf(m)
	k.Limits, k.Own, k.Weight = ls, len(m.Limits) > 0, m.Weight
	k.LastStart = m.State.LastStart
	k.SlowUntil, k.SlowDowns = m.State.SlowUntil, m.State.SlowDowns
	for _, mk := range m.State.Marks {
		k.LastStart = laterOf(k.LastStart, mk.Last)
	}
	if len(ls) > 0 {
		if open := laterOf(slot.KeyOpen(m, ls, 0), slot.SlowOpen(m.State, 0, now)); open.After(now) {
			k.NextStart = open
			// Jobs wait for it: pending, but for the one holding the key
			// (it runs, or is about to).
			waiting := k.Pending
			if k.Held {
				waiting--
			}
			k.AtLimit = waiting > 0
		}
	}
	return nil
}

// KeyLimit (api.KeyLimit) gives one key limits of its own, or (Limits
// nil) takes them away, so that the key follows the queue's key_limits
// again.
//
// Weight, given (1 to api.MaxWeight), sets the key's weight in the
// waiting room (slot.Meter.Weight); an entry that gives one keeps the
// key's limits when it gives none (Limits nil).
type KeyLimit = api.KeyLimit

// SetKeyLimits does Engine.SetKeyLimits's work.
func (e *keyLanes) SetKeyLimits(ctx context.Context, name string, ls []KeyLimit) ([]KeyInfo, error) {
	switch {
	case len(ls) == 0:
		return nil, input.Invalid("invalid_keys", "keys", "give at least one key")
	case len(ls) > slot.MaxKeyOverrides:
		return nil, input.Invalid("too_many_keys", "keys", fmt.Sprintf("%d keys; one call sets at most %d", len(ls), slot.MaxKeyOverrides))
	}
	seen := map[string]bool{}
	for i, kl := range ls {
		prefix := fmt.Sprintf("keys[%d].", i)
		if err := slot.ValidateKey(prefix+"key", kl.Key); err != nil {
			return nil, err
		}
		if seen[kl.Key] {
			return nil, input.Invalid("duplicate_key", prefix+"key", fmt.Sprintf("key %q is given twice", kl.Key))
		}
		seen[kl.Key] = true
		if kl.Limits != nil && len(kl.Limits) == 0 {
			return nil, input.Invalid("invalid_limit", prefix+"limits", "give a key at least one limit, or null to clear its own")
		}
		if err := slot.ValidateKeyLimits(kl.Limits, prefix); err != nil {
			return nil, err
		}
		if w := kl.Weight; w != nil && (*w < 1 || *w > api.MaxWeight) {
			return nil, input.Invalid("invalid_weight", prefix+"weight", fmt.Sprintf("a key's weight must be between 1 and %d", api.MaxWeight))
		}
	}
	q, err := e.admin.Queue(ctx, name)
	if err != nil {
		return nil, err
	}
	limits := slices.ContainsFunc(ls, func(kl KeyLimit) bool { return kl.Limits != nil || kl.Weight == nil })
	if limits && !q.Config.Keyed() {
		return nil, input.Invalid("not_keyed", "queue", fmt.Sprintf("queue %s keeps no limit per key: configure key_limits first (a key's own limits replace them for that key)", name))
	}
	for i, kl := range ls {
		for _, l := range kl.Limits {
			if t := tickOf(slot.Limits{l}); q.Config.Skew >= t {
				return nil, input.Invalid("invalid_limit", fmt.Sprintf("keys[%d].limits", i),
					fmt.Sprintf("%s allows a start every %s on average, not more than the queue's skew %s", l, t, q.Config.Skew))
			}
		}
	}
	out := make([]KeyInfo, len(ls))
	for i, kl := range ls {
		if err := e.setKeyLimits(ctx, q, kl); err != nil {
			return nil, fmt.Errorf("set key limits of %s: %w", name, err)
		}
		if out[i], err = e.Key(ctx, name, kl.Key); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tickOf is the shortest average time between starts ls allow.
func tickOf(ls slot.Limits) time.Duration { return slot.Config{Limits: ls}.Tick() }

func (e *keyLanes) setKeyLimits(ctx context.Context, q Queue, kl KeyLimit) error {
	for try := 0; ; try++ {
		m, err := e.readMeter(ctx, q, kl.Key)
		if err != nil {
			return err
		}
		own := slot.Limits(kl.Limits)
		if kl.Weight != nil {
			m.Weight = *kl.Weight
			if own == nil {
				own = m.Limits // a weight alone keeps the key's limits
			}
		} else if m.Version == 0 && own == nil {
			return nil // nothing to clear
		}
		m = reslotMeter(q.Config, m, own)
		_, err = e.state.PutMeter(ctx, m, m.Version, m.Keep(q.Config.LimitsOf(m)))
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrConflict) || try >= meterTries {
			return fmt.Errorf("key %s: %w", kl.Key, err)
		}
	}
}
