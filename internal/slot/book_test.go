package slot

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// book returns the keys (and tickets) BookNext books, one call, as
// "key:ticket" with "-" for the empty key.
func bookNames(ws []WaitingJob) string {
	var b []string
	for _, w := range ws {
		k := w.Key
		if k == "" {
			k = "-"
		}
		b = append(b, fmt.Sprintf("%s:%d", k, w.Ticket))
	}
	return strings.Join(b, " ")
}

// jobsOf makes waiting jobs from "key:ticket[:priority]" words.
func jobsOf(t *testing.T, s string) []WaitingJob {
	t.Helper()
	var out []WaitingJob
	for _, f := range strings.Fields(s) {
		var w WaitingJob
		parts := strings.Split(f, ":")
		if parts[0] != "-" {
			w.Key = parts[0]
		}
		if _, err := fmt.Sscan(parts[1], &w.Ticket); err != nil {
			t.Fatal(err)
		}
		if len(parts) > 2 {
			if _, err := fmt.Sscan(parts[2], &w.Priority); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, w)
	}
	return out
}

func TestBookNext(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		cfg     Config
		room    WaitRoom
		waiting string
		n       int
		want    string
	}{
		{"ticket order within a key", Config{BookAhead: 10}, WaitRoom{}, "a:3 a:1 a:2", 10, "a:1 a:2 a:3"},
		{"round-robin across keys", Config{BookAhead: 10}, WaitRoom{}, "a:1 a:2 a:3 b:4 b:5 c:6", 10, "a:1 b:4 c:6 a:2 b:5 a:3"},
		{"jobs without a key are one key", Config{BookAhead: 10}, WaitRoom{}, "-:1 -:2 a:3 a:4", 10, "-:1 a:3 -:2 a:4"},
		{"weight gives turns", Config{BookAhead: 10}, WaitRoom{Weights: map[string]int{"a": 3}},
			"a:1 a:2 a:3 a:4 a:5 b:6 b:7 b:8", 10, "a:1 a:2 a:3 b:6 a:4 a:5 b:7 b:8"},
		{"priority first", Config{BookAhead: 10}, WaitRoom{}, "a:1 a:2 b:3:1 c:4:5 a:5:2", 10, "b:3 a:5 a:1 a:2 c:4"},
		{"priority 0 is 3", Config{BookAhead: 10}, WaitRoom{}, "a:1:4 b:2 c:3:3", 10, "b:2 c:3 a:1"},
		{"the queue's bound", Config{BookAhead: 5}, WaitRoom{Booked: 3}, "a:1 b:2 c:3", 10, "a:1 b:2"},
		{"the queue's bound reached", Config{BookAhead: 5}, WaitRoom{Booked: 5}, "a:1 b:2 c:3", 10, ""},
		{"a key at its bound is passed over", Config{KeyBookAhead: 2}, WaitRoom{KeyBooked: map[string]int{"a": 1}},
			"a:1 a:2 a:3 b:4 b:5 b:6", 10, "a:1 b:4 b:5"},
		{"n bounds the bookings", Config{BookAhead: 10}, WaitRoom{}, "a:1 b:2 c:3", 1, "a:1"},
		{"the turn goes on from the last key", Config{BookAhead: 10}, WaitRoom{Turns: [5]Turn{2: {Key: "b", Used: 1}}},
			"a:1 b:2 c:3", 10, "c:3 a:1 b:2"},
		{"a key keeps its turn while it has turns left", Config{BookAhead: 10},
			WaitRoom{Weights: map[string]int{"b": 2}, Turns: [5]Turn{2: {Key: "b", Used: 1}}}, "a:1 b:2 c:3", 10, "b:2 c:3 a:1"},
		{"a key that left is passed", Config{BookAhead: 10}, WaitRoom{Turns: [5]Turn{2: {Key: "bb", Used: 1}}},
			"a:1 b:2 c:3", 10, "c:3 a:1 b:2"},
		{"not yet due", Config{BookAhead: 10}, WaitRoom{}, "a:1 a:2 b:3", 10, "a:2 b:3"},
		{"a key runs one job at a time", Config{BookAhead: 10, KeyMaxRunning: 1}, WaitRoom{KeyBooked: map[string]int{"b": 1}},
			"a:1 a:2 b:3 -:4 -:5", 10, "-:4 a:1 -:5"},
		{"a key's bound is its cap when lower", Config{KeyBookAhead: 3, KeyMaxRunning: 2}, WaitRoom{},
			"a:1 a:2 a:3 b:4", 10, "a:1 b:4 a:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.cfg.KeyMaxRunning == 0 {
				// Keys that may run many jobs at once: the bounds
				// alone limit their bookings (Config.KeyBound).
				tt.cfg.KeyMaxRunning = MaxKeyRunning
			}
			ws := jobsOf(t, tt.waiting)
			if tt.name == "not yet due" {
				ws[0].NotBefore = now.Add(time.Second)
			}
			got, _ := BookNext(tt.cfg, now, tt.room, ws, tt.n)
			if g := bookNames(got); g != tt.want {
				t.Errorf("BookNext = %q, want %q", g, tt.want)
			}
			// One at a time, the room carried along, books the same.
			r, var1 := tt.room, []WaitingJob(nil)
			left := ws
			for range tt.n {
				one, next := BookNext(tt.cfg, now, r, left, 1)
				if len(one) == 0 {
					break
				}
				var1, r = append(var1, one[0]), next
				left = withoutJob(left, one[0])
			}
			if g := bookNames(var1); g != tt.want {
				t.Errorf("BookNext one at a time = %q, want %q", g, tt.want)
			}
		})
	}
}

func withoutJob(ws []WaitingJob, w WaitingJob) []WaitingJob {
	var out []WaitingJob
	for _, x := range ws {
		if x != w {
			out = append(out, x)
		}
	}
	return out
}

// FuzzBookNext checks the rule's invariants on random rooms, booking one
// job at a time as workers do: each booking keeps both bounds, takes a
// due job of the highest priority whose key fits, the first ticket of its
// key at that priority, and is made whenever such a job exists; a key
// never gets more than its weight of bookings between two bookings of
// another key of the same priority that waits all along; every job is
// booked once when the bounds are freed as jobs start.
func FuzzBookNext(f *testing.F) {
	f.Add(uint64(1), uint8(40), uint8(4), uint8(3), uint8(2))
	f.Add(uint64(7), uint8(200), uint8(9), uint8(0), uint8(5))
	f.Add(uint64(9), uint8(30), uint8(1), uint8(1), uint8(0))
	f.Fuzz(func(t *testing.T, seed uint64, jobs, keys, bookAhead, keyBookAhead uint8) {
		rng := rand.New(rand.NewPCG(seed, seed>>3))
		now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		cfg := Config{BookAhead: int(bookAhead % 8), KeyBookAhead: int(keyBookAhead % 4), KeyMaxRunning: int(seed % 4)}
		nk := int(keys%10) + 1
		room := WaitRoom{Weights: map[string]int{}, KeyBooked: map[string]int{}}
		for k := range nk {
			if rng.IntN(2) == 0 {
				room.Weights[keyName(k)] = rng.IntN(4) + 1
			}
		}
		var waiting []WaitingJob
		for i := range int(jobs) {
			w := WaitingJob{Ticket: int64(i + 1), Key: keyName(rng.IntN(nk)), Priority: rng.IntN(6)}
			if rng.IntN(10) == 0 {
				w.NotBefore = now.Add(time.Duration(rng.IntN(3)) * time.Second)
			}
			waiting = append(waiting, w)
		}
		var booked []WaitingJob // booked and not started, in booking order
		var order []WaitingJob  // every booking
		seen := map[int64]bool{}
		for step := 0; len(waiting) > 0; step++ {
			if step > 10*int(jobs)+100 {
				t.Fatalf("%d jobs never booked: %v", len(waiting), waiting)
			}
			if rng.IntN(3) == 0 || !canBook(cfg, now, room, waiting) {
				// A booked job starts (or time moves on): room frees.
				if len(booked) > 0 {
					i := rng.IntN(len(booked))
					room.Booked--
					room.KeyBooked[booked[i].Key]--
					booked = append(booked[:i], booked[i+1:]...)
				} else {
					now = now.Add(time.Second)
				}
				continue
			}
			got, next := BookNext(cfg, now, room, waiting, 1)
			if len(got) != 1 {
				t.Fatalf("a job fits but BookNext booked %d", len(got))
			}
			w := got[0]
			if seen[w.Ticket] {
				t.Fatalf("ticket %d booked twice", w.Ticket)
			}
			seen[w.Ticket] = true
			for _, o := range waiting {
				if !isDue(o, now) || !cfg.Fits(room, o.Key) {
					continue
				}
				if o.Prio() < w.Prio() {
					t.Fatalf("booked %+v while %+v of a higher priority fits", w, o)
				}
				if o.Prio() == w.Prio() && o.Key == w.Key && o.Ticket < w.Ticket {
					t.Fatalf("booked %+v before %+v of its key", w, o)
				}
			}
			if !isDue(w, now) || !cfg.Fits(room, w.Key) {
				t.Fatalf("booked %+v, which is not due or does not fit", w)
			}
			if next.Booked != room.Booked+1 || next.KeyBooked[w.Key] != room.KeyBooked[w.Key]+1 {
				t.Fatalf("the room's counts did not move on by the booking")
			}
			if b := cfg.KeyBound(w.Key); cfg.BookAhead > 0 && next.Booked > cfg.BookAhead || b > 0 && next.KeyBooked[w.Key] > b {
				t.Fatalf("a bound is passed: %+v under %+v", next, cfg)
			}
			room = next
			booked = append(booked, w)
			order = append(order, w)
			waiting = withoutJob(waiting, w)
		}
		if len(order) != int(jobs) {
			t.Fatalf("%d bookings of %d jobs", len(order), jobs)
		}
	})
}

func keyName(i int) string {
	if i == 0 {
		return ""
	}
	return fmt.Sprintf("k%d", i)
}

func isDue(w WaitingJob, now time.Time) bool { return w.NotBefore.IsZero() || !w.NotBefore.After(now) }

func canBook(c Config, now time.Time, r WaitRoom, ws []WaitingJob) bool {
	for _, w := range ws {
		if isDue(w, now) && c.Fits(r, w.Key) {
			return true
		}
	}
	return false
}

// TestBookNextShares books from keys that all wait all along, at one
// priority and without key bounds: between two bookings of one key,
// every other key gets at most its weight, and over whole rounds each
// key gets its weight's share.
func TestBookNextShares(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		nk := rng.IntN(6) + 1
		room := WaitRoom{Weights: map[string]int{}}
		total := 0
		for k := range nk {
			w := rng.IntN(4) + 1
			room.Weights[keyName(k)] = w
			total += w
		}
		rounds := rng.IntN(5) + 1
		var waiting []WaitingJob
		for k := range nk {
			// More than the rounds need: every key waits all along.
			for i := range (rounds + 1) * room.Weight(keyName(k)) {
				waiting = append(waiting, WaitingJob{Ticket: int64(k*1000 + i + 1), Key: keyName(k), Priority: 2})
			}
		}
		got, _ := BookNext(Config{BookAhead: total * rounds, KeyMaxRunning: MaxKeyRunning}, time.Time{}, room, waiting, total*rounds)
		count := map[string]int{}
		since := map[string]map[string]int{} // since[a][b]: b's bookings since a's last
		for _, w := range got {
			count[w.Key]++
			for a, m := range since {
				if a != w.Key {
					m[w.Key]++
					if m[w.Key] > room.Weight(w.Key) {
						t.Fatalf("trial %d: key %q booked %d times between two of %q (weight %d): %s", trial, w.Key, m[w.Key], a, room.Weight(w.Key), bookNames(got))
					}
				}
			}
			since[w.Key] = map[string]int{}
		}
		for k := range nk {
			if count[keyName(k)] != rounds*room.Weight(keyName(k)) {
				t.Fatalf("trial %d: key %q booked %d times in %d rounds, weight %d", trial, keyName(k), count[keyName(k)], rounds, room.Weight(keyName(k)))
			}
		}
	}
}

// A started booking held for its key (Hold) counts against its key's
// bound, not the queue's; freeing it frees both, and a freed booking is
// not held again.
func TestHorizonHold(t *testing.T) {
	var h Horizon
	a1 := h.Book("a", "1", time.Time{})
	h.Book("b", "2", time.Time{})
	if !h.Hold(a1) || h.Hold(a1) {
		t.Fatal("Hold: want true once, then false")
	}
	if r := h.Room(nil); r.Booked != 1 || r.KeyBooked["a"] != 1 {
		t.Fatalf("room %+v: want 1 unstarted booking, key a at 1", r)
	}
	if !h.Free(a1) || h.Hold(a1) {
		t.Fatal("a freed booking is held again")
	}
	if r := h.Room(nil); r.Booked != 1 || r.KeyBooked["a"] != 0 {
		t.Fatalf("room %+v after the free", r)
	}
}

// A horizon counts its room when its keys' counts add up to its
// waiting jobs; one written before it kept counts (Waiting alone), even
// with the counts of the jobs that came since, is read whole until a
// look counts it again.
func TestHorizonCounted(t *testing.T) {
	var h Horizon
	if !h.Counted() {
		t.Fatal("an empty horizon is not counted")
	}
	h.Enter(0, "A")
	h.Enter(1, "B")
	if !h.Counted() || h.Waiting != 2 {
		t.Fatalf("after two entered: counted %v, waiting %d", h.Counted(), h.Waiting)
	}
	h.Leave(0, "A")
	h.Leave(0, "A") // gone already: nothing to count out
	if !h.Counted() || h.Waiting != 1 {
		t.Fatalf("after A left twice: counted %v, waiting %d", h.Counted(), h.Waiting)
	}
	old := Horizon{Waiting: 5}
	old.Enter(0, "A")
	if old.Counted() {
		t.Fatalf("a horizon of 5 jobs waiting uncounted and one counted is counted: %+v", old)
	}
	old.Recount([api.MaxPriority]map[string]int64{2: map[string]int64{"A": 4, "B": 2}})
	if !old.Counted() || old.Waiting != 6 {
		t.Fatalf("after a recount: counted %v, waiting %d", old.Counted(), old.Waiting)
	}
}

// A room of more keys than the horizon's record may count keeps the
// rest in Waiting alone: it is read whole (not Counted), and its counts
// stay within MaxCountBytes.
func TestHorizonCountsBounded(t *testing.T) {
	var h Horizon
	key := func(i int) string { return fmt.Sprintf("tenant-%0100d", i) }
	n := MaxCountBytes/countCost(key(0)) + 10
	for i := range n {
		h.Enter(0, key(i))
	}
	if h.Waiting != int64(n) {
		t.Fatalf("%d jobs of %d keys entered, %d waiting", n, n, h.Waiting)
	}
	if h.Counted() {
		t.Fatal("a room of more keys than the record may count is counted")
	}
	if b := h.countBytes(); b > MaxCountBytes {
		t.Fatalf("the counts take %d bytes, more than %d", b, MaxCountBytes)
	}
	h.Enter(0, key(0)) // a key counted already is counted on
	if h.Keys[api.DefaultPriority-1][key(0)] != 2 {
		t.Fatalf("key 0 counted %d, want 2", h.Keys[api.DefaultPriority-1][key(0)])
	}
}
