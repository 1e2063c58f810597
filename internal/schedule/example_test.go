package schedule_test

import (
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/schedule"
)

// A cron schedule in Paris across the spring-forward night: 02:30 does
// not exist on 2026-03-29, so that day's occurrence is at the end of the
// gap, 03:00 CEST.
func ExampleRule_Next() {
	spec := schedule.Spec{Cron: "30 2 * * *", TZ: "Europe/Paris", Job: schedule.Job{Kind: "send-report"}}
	now := time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC)
	rule, err := spec.Validate(now)
	if err != nil {
		fmt.Println(err)
		return
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	t := now
	for range 3 {
		t = rule.Next(t)
		fmt.Println(t.In(paris).Format("2006-01-02 15:04 MST"), schedule.OccurrenceID("report", t))
	}
	// Output:
	// 2026-03-28 02:30 CET report:2026-03-28T01:30:00.000Z
	// 2026-03-29 03:00 CEST report:2026-03-29T01:00:00.000Z
	// 2026-03-30 02:30 CEST report:2026-03-30T00:30:00.000Z
}
