package console

import (
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// A queue (and a key) that its target slowed down says so, until when,
// and how many slow-downs it had; once the time has passed only the count
// is left.
func TestSlowedDown(t *testing.T) {
	f, _, h := fixture(t)
	st := keyed(f)
	until := time.Now().Add(time.Hour)
	st.State.SlowUntil, st.State.SlowDowns = until, 2
	f.keys["reports"] = append(f.keys["reports"], api.KeyInfo{Key: "acme", Pending: 3, SlowUntil: until, SlowDowns: 1})
	_, body := get(t, h, "/queues/reports")
	for _, want := range []string{"slowed by its target until", "2 slow-downs"} {
		if !strings.Contains(body, want) {
			t.Errorf("queue page lacks %q", want)
		}
	}
	_, body = get(t, h, "/queues/reports/keys/acme")
	if !strings.Contains(body, `<dd id="key-slowed">by its target until`) || !strings.Contains(body, "(1 slow-downs so far)") {
		t.Errorf("key page does not say it is slowed down:\n%s", body)
	}
	st.State.SlowUntil = time.Now().Add(-time.Minute)
	_, body = get(t, h, "/queues/reports")
	if strings.Contains(body, "slowed by its target until") || !strings.Contains(body, "2 slow-downs") {
		t.Error("a slow-down that ended still shows, or its count is gone")
	}
}
