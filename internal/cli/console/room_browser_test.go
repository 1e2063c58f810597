package console_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// TestBrowserWaitingRoom drives the console in Chromium: the page of a
// queue with a booking horizon shows its waiting room beside the
// timeline: the jobs booked against the bound, the jobs waiting, by
// priority and by busiest key, as the stack counts them.
func TestBrowserWaitingRoom(t *testing.T) {
	ctx := needBrowser(t)
	s := startStack(t)
	s.create(t, "tenants", api.Config{Interval: time.Hour, BookAhead: 10, KeyBookAhead: 1})
	if _, err := s.c.PauseQueue(t.Context(), &client.PauseQueueInput{Queue: "tenants"}); err != nil {
		t.Fatal(err)
	}
	// A: one booked, three waiting; then, the room not empty, B's two
	// wait too, one of them of priority 1.
	var a, b []api.Spec
	for range 4 {
		a = append(a, api.Spec{Kind: "echo", Key: "acme"})
	}
	b = []api.Spec{{Kind: "echo", Key: "globex"}, {Kind: "echo", Key: "globex", Priority: 1}}
	for _, specs := range [][]api.Spec{a, b} {
		if _, err := s.c.Enqueue(t.Context(), &client.EnqueueInput{Queue: "tenants", Jobs: specs}); err != nil {
			t.Fatal(err)
		}
	}
	var got struct {
		Booked, Bound, Waiting string
		Priorities, Keys       [][]string
		Beside                 bool
	}
	rows := func(id string) string {
		return `[...document.querySelectorAll("#` + id + ` tbody tr")].map(r => [...r.cells].map(c => c.innerText))`
	}
	if err := chromedp.Run(ctx,
		chromedp.Navigate(s.console+"/queues/tenants"),
		chromedp.WaitVisible(`#room`),
		chromedp.Text(`#room-booked`, &got.Booked),
		chromedp.Text(`#room-key-bound`, &got.Bound),
		chromedp.Text(`#room-waiting`, &got.Waiting),
		chromedp.Evaluate(rows("room-priorities"), &got.Priorities),
		chromedp.Evaluate(rows("room-keys"), &got.Keys),
		// Beside the timeline: the room's box begins right of the
		// timeline's, on the same row.
		chromedp.Evaluate(`(() => { const t = document.querySelector("#timeline-h").closest("section").getBoundingClientRect(), r = document.querySelector("#room").getBoundingClientRect(); return r.left >= t.right && r.top < t.bottom })()`, &got.Beside),
	); err != nil {
		t.Fatal(err)
	}
	if got.Booked != "1 of 10" || got.Bound != "at most 1" || got.Waiting != "5" {
		t.Errorf("room figures: booked %q, a key's bound %q, waiting %q; want 1 of 10, at most 1, 5", got.Booked, got.Bound, got.Waiting)
	}
	if want := [][]string{{"1", "1"}, {"3", "4"}}; !equalRows(got.Priorities, want) {
		t.Errorf("by priority %q, want %q", got.Priorities, want)
	}
	if want := [][]string{{"acme", "3"}, {"globex", "2"}}; !equalRows(got.Keys, want) {
		t.Errorf("busiest keys %q, want %q", got.Keys, want)
	}
	if !got.Beside {
		t.Errorf("the waiting room is not beside the timeline")
	}
}

func equalRows(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}
