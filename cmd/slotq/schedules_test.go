package main

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/pkg/api"
)

// slotqRun runs the slotq binary against the local runtime at url and
// returns its stdout; a failure fails the test.
func slotqRun(t *testing.T, url string, args ...string) string {
	t.Helper()
	bin, err := slotqBinary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, append(args, "--endpoint-url", url)...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("slotq %s: %v: %s%s", strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

// On the local runtime, a schedule --every 1s made by the CLI: every
// occurrence in the 12.5 s after it was created starts once, in order
// (10 to 13 of them), and `slotq schedules list` shows it. How soon each
// started after its time is logged (slotq queues starts --json), not
// asserted: a loaded host stretches it.
func TestLocalScheduleEverySecond(t *testing.T) {
	p := startLocal(t, nil)
	slotqRun(t, p.url, "queues", "create", "ticks", "--interval", "500ms")
	out := slotqRun(t, p.url, "schedules", "create", "ticks", "beat", "--every", "1s", "--kind", "echo", "--json")
	var sc api.Schedule
	if err := json.Unmarshal([]byte(out), &sc); err != nil {
		t.Fatalf("create's answer %s: %v", out, err)
	}
	// The occurrences of the 12.5 s from the first one on: whole seconds.
	first := sc.CreatedAt.Truncate(time.Second).Add(time.Second)
	var want []string
	for at := first; !at.After(first.Add(12500 * time.Millisecond)); at = at.Add(time.Second) {
		want = append(want, api.OccurrenceID("beat", at))
	}
	if len(want) < 10 || len(want) > 13 {
		t.Fatalf("%d occurrences in 12.5 s", len(want))
	}
	started := func() map[string]int {
		n := map[string]int{}
		for _, s := range p.starts("ticks") {
			n[s["job_id"].(string)]++
		}
		return n
	}
	testenv.WaitFor(t, "each occurrence of the 12.5 s to start", func() bool {
		n := started()
		for _, id := range want {
			if n[id] == 0 {
				return false
			}
		}
		return true
	})
	list := slotqRun(t, p.url, "schedules", "list", "ticks")
	if !strings.Contains(list, "beat") || !strings.Contains(list, "every 1s") {
		t.Errorf("schedules list:\n%s", list)
	}
	var starts struct {
		Starts []startJSON `json:"starts"`
	}
	raw := slotqRun(t, p.url, "queues", "starts", "ticks", "--json")
	if err := json.Unmarshal([]byte(raw), &starts); err != nil {
		t.Fatalf("starts --json %s: %v", raw, err)
	}
	once := map[string]int{}
	var order []string
	var worst time.Duration
	for _, s := range starts.Starts {
		once[s.JobID]++
		if !slices.Contains(want, s.JobID) {
			continue
		}
		order = append(order, s.JobID)
		late := s.StartedAt.Sub(s.SlotAt)
		if late < 0 {
			late = -late
		}
		worst = max(worst, late)
		if at := sc.CreatedAt; !s.SlotAt.After(at) {
			t.Errorf("%s: slot %s not after the create", s.JobID, s.SlotAt)
		}
	}
	for _, id := range want {
		if once[id] != 1 {
			t.Errorf("occurrence %s started %d times; want once", id, once[id])
		}
	}
	if !slices.IsSorted(order) {
		t.Errorf("occurrences started out of order: %v", order)
	}
	t.Logf("%d occurrences in 12.5 s, each started once; farthest start from its time %v", len(want), worst)
	// Bad rules are refused naming the field: by the CLI (no rule, exit
	// 2) before anything is sent, by the admin function (an unknown zone,
	// exit 1).
	bin, _ := slotqBinary()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"schedules", "create", "ticks", "x", "--kind", "echo"}, 2, "no_rule (schedule.every)"},
		{[]string{"schedules", "create", "ticks", "x", "--cron", "0 8 * * *", "--tz", "Mars/Olympus", "--kind", "echo"}, 1, "unknown_tz (schedule.tz)"},
		{[]string{"schedules", "get", "ticks", "none"}, 1, "schedule_not_found (name)"},
	} {
		cmd := exec.Command(bin, append(c.args, "--endpoint-url", p.url)...)
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); err == nil || code != c.code || !strings.Contains(string(out), c.want) {
			t.Errorf("slotq %s: exit %d: %s; want exit %d with %s", strings.Join(c.args, " "), code, out, c.code, c.want)
		}
	}
	// Deleting it cancels the occurrences it made ahead.
	del := slotqRun(t, p.url, "schedules", "delete", "ticks", "beat", "--json")
	var d struct {
		Cancelled int `json:"cancelled"`
	}
	if err := json.Unmarshal([]byte(del), &d); err != nil || d.Cancelled == 0 {
		t.Errorf("delete: %s (%v); want the occurrences made ahead cancelled", del, err)
	}
}

// A schedule that leaves missed out shows the policy it has, latest, not
// "-".
func TestScheduleRowsMissedDefault(t *testing.T) {
	for _, tc := range []struct{ missed, want string }{{"", api.MissedLatest}, {api.MissedAll, api.MissedAll}} {
		var b strings.Builder
		scheduleRows(api.Schedule{Queue: "q", Name: "s", Spec: api.ScheduleSpec{Missed: tc.missed}})(&b)
		var got string
		for _, l := range strings.Split(b.String(), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "missed" {
				got = f[1]
			}
		}
		if got != tc.want {
			t.Errorf("missed %q shows %q, want %q:\n%s", tc.missed, got, tc.want, b.String())
		}
	}
}
