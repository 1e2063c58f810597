package console

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// keyed adds queue reports to f: 100 starts a second for the queue,
// each key at most 2 in any 1s, any number of a key's jobs at once.
func keyed(f *fakeSource) *QueueStats {
	st := f.addQueue("reports", api.Config{Rate: api.Rate{N: 100, Per: time.Second}, Skew: 10 * time.Millisecond,
		KeyLimits: []api.Limit{{Window: api.Rate{N: 2, Per: time.Second}}}, KeyMaxRunning: api.NoKeyCap})
	st.Lanes.KeysAtLimit = 3
	return st
}

// A keyed queue's page says the key limit in words, counts the keys at
// their limit and lists the busiest keys, at most maxKeyRows, each with
// its limit (its own marked) and a link to its page.
func TestQueuePageKeys(t *testing.T) {
	f, _, h := fixture(t)
	keyed(f)
	own := []api.Limit{{Rate: api.Rate{N: 5, Per: time.Second}}}
	f.keys["reports"] = append(f.keys["reports"], api.KeyInfo{Key: "acme", Limits: own, Own: true, Pending: 40, Waiting: 38, Held: true,
		NextStart: t0.Add(11 * time.Second), AtLimit: true})
	for i := 1; i < 25; i++ {
		f.keys["reports"] = append(f.keys["reports"], api.KeyInfo{Key: fmt.Sprintf("tenant-%02d", i),
			Limits: f.queues["reports"].Config.KeyLimits, Pending: int64(30 - i)})
	}
	// Read at its limit, but that next start has passed by the page's
	// time (the keys are read at most every keysEvery).
	f.keys["reports"][2].NextStart, f.keys["reports"][2].AtLimit = t0.Add(5*time.Second), true
	code, body := get(t, h, "/queues/reports")
	if code != 200 {
		t.Fatalf("queue page: %d\n%s", code, body)
	}
	for _, want := range []string{
		`<dd id="key-limits">window 2/1s</dd>`,
		`<dd id="keys-at-limit">3</dd>`,
		"<dd>no cap</dd>",
		"The 20 busiest of 25 keys",
		`<a href="/queues/reports/keys/acme">acme</a></td><td>rate 5/1s <b class="own">own</b></td><td class="num">40</td><td class="num">38</td><td>yes</td><td>14:00:11.000 (at its limit)</td>`,
		`<a href="/queues/reports/keys/tenant-01">tenant-01</a></td><td>window 2/1s</td><td class="num">29</td><td class="num">0</td><td>no</td><td>now</td>`,
		`<a href="/queues/reports/keys/tenant-02">tenant-02</a></td><td>window 2/1s</td><td class="num">28</td><td class="num">0</td><td>no</td><td>14:00:05.000</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("queue page lacks %q", want)
		}
	}
	if n := strings.Count(body, "<tr data-key="); n != maxKeyRows {
		t.Errorf("%d keys listed, want the %d busiest", n, maxKeyRows)
	}
	if strings.Contains(body, "tenant-20") {
		t.Error("a key past the busiest 20 is listed")
	}

	// A queue without key_limits shows no keys part and lists none.
	f.takeCalls()
	_, body = get(t, h, "/queues/emails")
	if strings.Contains(body, `id="keys-h"`) {
		t.Error("a queue without key_limits shows keys")
	}
	for _, c := range f.takeCalls() {
		if strings.HasPrefix(c, "list_keys") {
			t.Errorf("a queue without key_limits asked %q", c)
		}
	}
}

// A key's page draws that key's starts only, judged by the key's limits
// (its own if it has some, else the queue's key_limits): another key's
// starts between them break nothing of this key's.
func TestKeyTimeline(t *testing.T) {
	at := func(key string, ms ...int) []api.Start {
		var out []api.Start
		for i, m := range ms {
			g := t0.Add(time.Second + time.Duration(m)*time.Millisecond)
			out = append(out, api.Start{JobID: fmt.Sprintf("%s-%d", key, i), Ticket: int64(m + 1), Attempt: 1, SlotAt: g, GateAt: g, StartedAt: g, Key: key})
		}
		return out
	}
	tests := []struct {
		name   string
		own    []api.Limit // acme's own limits, if any
		starts []api.Start
		want   []string
		not    []string
	}{
		{"kept, whatever the other keys do", nil, append(at("acme", 0, 100, 1200), at("zed", 150, 160, 170)...),
			[]string{`data-starts="3" data-of="key" data-bad="0"`, "✓ No run of starts breaks at most 2 in any 1s (less the skew, 10ms)",
				"the queue's key_limits", "Starts of key acme of queue reports"},
			[]string{"zed-", "gapbad"}},
		{"broken", nil, append(at("acme", 0, 100, 500), at("zed", 600)...),
			[]string{`data-starts="3" data-of="key" data-bad="1"`, "✗ 1 starts break at most 2 in any 1s (less the skew, 10ms)",
				`class="start gapbad" data-job="acme-2"`, "the key's limit: at most 2 in any 1s"},
			[]string{"zed-"}},
		{"its own limit", []api.Limit{{Window: api.Rate{N: 5, Per: time.Second}}}, at("acme", 0, 100, 500),
			[]string{`data-bad="0"`, "✓ No run of starts breaks at most 5 in any 1s", `<b class="own">its own</b>`},
			[]string{"gapbad"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, h := fixture(t)
			keyed(f)
			f.keys["reports"] = []api.KeyInfo{{Key: "acme", Limits: f.queues["reports"].Config.KeyLimits, Pending: 2}}
			if tt.own != nil {
				f.keys["reports"][0].Limits, f.keys["reports"][0].Own = tt.own, true
			}
			f.starts["reports"] = tt.starts
			code, body := get(t, h, "/queues/reports/keys/acme")
			if code != 200 {
				t.Fatalf("key page: %d\n%s", code, body)
			}
			wantPage(t, "key page", body, tt.want, tt.not)
			// The queue's own timeline still judges all its starts by the
			// queue's limit, which they keep.
			if _, body := get(t, h, "/queues/reports"); !regexp.MustCompile(`data-starts="\d+" data-of="queue" data-bad="0"`).MatchString(body) {
				t.Error("the queue's timeline judged its starts by a key's limit")
			}
		})
	}
}

// A key's page refuses a key no job can have before any admin call, and
// answers 404 for a queue without key_limits or that does not exist.
func TestKeyPageRefusals(t *testing.T) {
	f, _, h := fixture(t)
	keyed(f)
	tests := []struct {
		name, target string
		code         int
		want         string
	}{
		{"bad key", "/queues/reports/keys/bad%20key%21", 400, "must match [A-Za-z0-9_.:/@-]{1,200}"},
		{"queue without key_limits", "/queues/emails/keys/acme", 404, "queue emails has no key_limits"},
		{"no such queue", "/queues/nothing/keys/acme", 404, "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.takeCalls()
			code, body := get(t, h, tt.target)
			if code != tt.code || !strings.Contains(body, tt.want) {
				t.Errorf("%s: %d, want %d with %q\n%s", tt.target, code, tt.code, tt.want, body)
			}
			if tt.code == 400 && len(f.takeCalls()) > 0 {
				t.Error("a bad key was sent to the admin function")
			}
		})
	}
}

// list_keys reads every listed key's meter: a keyed queue's page asks it
// at most once per keysEvery, however often it refreshes.
func TestQueuePageKeysReadEvery(t *testing.T) {
	f := newFake()
	keyed(f)
	f.keys["reports"] = []api.KeyInfo{{Key: "acme", Pending: 2}}
	now := t0
	h := newServer(f, Options{Name: "test", Now: func() time.Time { return now }}).handler()
	asked := func() int {
		n := 0
		for _, c := range f.takeCalls() {
			if strings.HasPrefix(c, "list_keys") {
				n++
			}
		}
		return n
	}
	for _, step := range []struct {
		after time.Duration
		want  int
	}{{0, 1}, {5 * time.Second, 0}, {20 * time.Second, 0}, {10 * time.Second, 1}, {time.Second, 0}} {
		now = now.Add(step.after)
		if _, body := get(t, h, "/queues/reports?part=live"); !strings.Contains(body, `data-key="acme"`) {
			t.Fatalf("at +%s the page lacks its keys", now.Sub(t0))
		}
		if n := asked(); n != step.want {
			t.Errorf("at +%s: list_keys asked %d times, want %d", now.Sub(t0), n, step.want)
		}
	}
}
