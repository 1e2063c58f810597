package console_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// TestBrowserSchedules drives the console in Chromium: a queue's page
// lists its schedules, each with the next occurrence the stack answers.
func TestBrowserSchedules(t *testing.T) {
	ctx := needBrowser(t)
	s := startStack(t)
	s.create(t, "reports", api.Config{Interval: time.Second})
	every := api.Duration(time.Minute)
	for _, in := range []client.CreateScheduleInput{
		{Queue: "reports", Name: "morning", Spec: api.ScheduleSpec{Cron: "0 8 * * *", TZ: "Europe/Paris", Job: api.ScheduleJob{Kind: "echo"}}},
		{Queue: "reports", Name: "poll", Spec: api.ScheduleSpec{Every: &every, Job: api.ScheduleJob{Kind: "echo", Key: "partner"}}},
	} {
		if _, err := s.c.CreateSchedule(t.Context(), &in); err != nil {
			t.Fatal(err)
		}
	}
	var rows []struct{ Name, Next, Text string }
	if err := chromedp.Run(ctx,
		chromedp.Navigate(s.console+"/queues/reports"),
		chromedp.WaitVisible(`table.schedules`),
		chromedp.Evaluate(`[...document.querySelectorAll("table.schedules tbody tr")].map(r => ({Name: r.dataset.schedule, Next: r.dataset.next, Text: r.innerText}))`, &rows),
	); err != nil {
		t.Fatal(err)
	}
	// The stack's answer after the page was read: a schedule's next
	// occurrence only moves on.
	out, err := s.c.ListSchedules(t.Context(), &client.ListSchedulesInput{Queue: "reports"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Name != "morning" || rows[1].Name != "poll" {
		t.Fatalf("schedules listed %+v, want morning and poll", rows)
	}
	for i, r := range rows {
		next, err := time.Parse(time.RFC3339Nano, r.Next)
		if err != nil {
			t.Fatalf("%s: next %q: %v", r.Name, r.Next, err)
		}
		if want := out.Schedules[i].Next; next.After(want) || !next.After(time.Now().Add(-time.Minute)) {
			t.Errorf("%s: page says next %s, the stack %s", r.Name, next, want)
		}
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	next, _ := time.Parse(time.RFC3339Nano, rows[0].Next)
	if n := next.In(paris); n.Hour() != 8 || n.Minute() != 0 {
		t.Errorf("morning's next occurrence %s is not 08:00 in Paris", n)
	}
	t.Logf("rows: %q", []string{rows[0].Text, rows[1].Text})
}
