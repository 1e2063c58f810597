package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
)

func testJobs(t *testing.T, newState func(t *testing.T) engine.State) {
	t.Run("CreateGet", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		full := job.Job{
			Queue: name, ID: "full", Target: "https://api.example.com/hook",
			Payload: []byte(`{"a":[1,2,3],"b":"x"}`), Status: job.Parked, Ticket: 42,
			SlotAt: at(time.Hour), NotBefore: at(time.Hour), Scheduled: true, Attempt: 2, Retickets: 3,
			ParkReason: job.Far, DueAt: at(45 * time.Minute), EnqueuedAt: base,
			StartedAt: at(-time.Minute), FinishedAt: at(-time.Second),
			LastError: "boom", ExpiresAt: farFuture, Key: "acct/42:x@y_z.-", Detached: true,
			TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", TraceState: "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
			AttemptSpan: "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01",
			Priority:    1,
			Booking:     7,
		}
		// A full history, each event with a target's answer of the most
		// an event keeps (commas, line breaks and runes of 3 bytes in it).
		answer := strings.Repeat("€, ok\n", job.MaxEventError/5)
		for i := range job.MaxHistory + 2 {
			full.Record(job.Event{Kind: job.AttemptFailed, At: at(time.Duration(i) * time.Second), Attempt: i + 1, Error: answer})
		}
		if e := full.History[0].Error; len(e) < job.MaxEventError-3 {
			t.Fatalf("an event kept %d bytes of the answer; want up to %d", len(e), job.MaxEventError)
		}
		bare := job.Job{Queue: name, ID: "bare", Kind: "k", Status: job.Queued, Ticket: 1,
			SlotAt: base, Attempt: 1, EnqueuedAt: base}
		createJobs(t, st, full, bare)
		for _, want := range []job.Job{full, bare} {
			if d := diffJob(getJob(t, st, name, want.ID), want); d != "" {
				t.Errorf("GetJob(%s): %s", want.ID, d)
			}
		}
		listed, err := st.ListJobs(t.Context(), engine.ListRequest{Queue: name, Status: job.Parked})
		if err != nil || len(listed) != 1 {
			t.Fatalf("ListJobs(parked) = %d jobs, %v; want 1", len(listed), err)
		}
		if d := diffJob(listed[0], full); d != "" {
			t.Errorf("ListJobs: %s", d)
		}
		// An update writes the key and the detached flag, and clears them.
		keyed := bare
		keyed.Key, keyed.Detached = "k1", true
		if err := st.UpdateJob(t.Context(), keyed, bare.Version()); err != nil {
			t.Fatalf("UpdateJob with a key: %v", err)
		}
		if d := diffJob(getJob(t, st, name, "bare"), keyed); d != "" {
			t.Errorf("GetJob after UpdateJob with a key: %s", d)
		}
		if err := st.UpdateJob(t.Context(), bare, keyed.Version()); err != nil {
			t.Fatalf("UpdateJob without a key: %v", err)
		}
		if d := diffJob(getJob(t, st, name, "bare"), bare); d != "" {
			t.Errorf("GetJob after UpdateJob without a key: %s", d)
		}
	})

	t.Run("NoAliasing", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		j := newJob(name, "a", 1, job.Queued)
		in := slices.Clone(j.Payload)
		createJobs(t, st, job.Job{Queue: name, ID: "a", Kind: j.Kind, Payload: in, Status: j.Status,
			Ticket: j.Ticket, SlotAt: j.SlotAt, Attempt: j.Attempt, EnqueuedAt: j.EnqueuedAt})
		in[2] = 'X'
		got := getJob(t, st, name, "a")
		if d := diffJob(got, j); d != "" {
			t.Errorf("changing the slice given to CreateJobs changed the record: %s", d)
		}
		got.Payload[2] = 'Y'
		if d := diffJob(getJob(t, st, name, "a"), j); d != "" {
			t.Errorf("changing the slice GetJob returned changed the record: %s", d)
		}
	})

	t.Run("CreateIdempotent", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		a, b := newJob(name, "a", 1, job.Queued), newJob(name, "b", 2, job.Queued)
		createJobs(t, st, a, b)

		a2, c := newJob(name, "a", 7, job.Parked), newJob(name, "c", 3, job.Queued)
		a2.Payload = []byte(`{"again":true}`)
		created, err := st.CreateJobs(t.Context(), []job.Job{a2, c, b})
		if err != nil {
			t.Fatalf("CreateJobs: %v", err)
		}
		if want := []bool{false, true, false}; !slices.Equal(created, want) {
			t.Errorf("created = %v, want %v", created, want)
		}
		for _, want := range []job.Job{a, b, c} {
			if d := diffJob(getJob(t, st, name, want.ID), want); d != "" {
				t.Errorf("job %s: %s", want.ID, d)
			}
		}
	})

	t.Run("GetNotFound", func(t *testing.T) {
		st := newState(t)
		_, err := st.GetJob(t.Context(), job.Ref{Queue: queueName(t), ID: "nope"})
		wantErr(t, "GetJob", err, engine.ErrJobNotFound)
	})

	t.Run("UpdateCAS", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name := queueName(t)
		j := newJob(name, "a", 1, job.Queued)
		createJobs(t, st, j)

		// Same version, other fields: a plain replace.
		same := j
		same.Payload = []byte(`{"v":2}`)
		if err := st.UpdateJob(ctx, same, j.Version()); err != nil {
			t.Fatalf("UpdateJob at the same version: %v", err)
		}
		moved := same
		moved.Status, moved.Ticket, moved.Retickets, moved.ParkReason, moved.DueAt = job.Parked, 9, 1, job.PausedQueue, at(time.Hour)
		if err := st.UpdateJob(ctx, moved, same.Version()); err != nil {
			t.Fatalf("UpdateJob: %v", err)
		}
		if d := diffJob(getJob(t, st, name, "a"), moved); d != "" {
			t.Errorf("after UpdateJob: %s", d)
		}

		stale := j
		stale.Status = job.Cancelled
		wantErr(t, "UpdateJob from a stale version", st.UpdateJob(ctx, stale, j.Version()), engine.ErrConflict)
		if d := diffJob(getJob(t, st, name, "a"), moved); d != "" {
			t.Errorf("record changed by a refused update: %s", d)
		}

		ghost := newJob(name, "ghost", 1, job.Queued)
		wantErr(t, "UpdateJob of a missing job", st.UpdateJob(ctx, ghost, ghost.Version()), engine.ErrJobNotFound)
		if _, err := st.GetJob(ctx, job.Ref{Queue: name, ID: "ghost"}); err == nil {
			t.Errorf("UpdateJob of a missing job created it")
		}
	})

	t.Run("List", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name, other := queueName(t), queueName(t)
		var jobs []job.Job
		for _, tk := range []int64{5, 1, 3, 2, 4} {
			jobs = append(jobs, newJob(name, fmt.Sprintf("p%d", tk), tk, job.Parked))
		}
		jobs = append(jobs,
			newJob(name, "f6", 6, job.Failed),
			newJob(name, "r7", 7, job.Running),
			newJob(name, "q8", 8, job.Queued),
			newJob(other, "o1", 1, job.Parked))
		createJobs(t, st, jobs...)

		cases := []struct {
			name string
			req  engine.ListRequest
			want []int64
		}{
			{"Parked", engine.ListRequest{Queue: name, Status: job.Parked}, []int64{1, 2, 3, 4, 5}},
			{"Failed", engine.ListRequest{Queue: name, Status: job.Failed}, []int64{6}},
			{"None", engine.ListRequest{Queue: other, Status: job.Failed}, nil},
			{"After", engine.ListRequest{Queue: name, Status: job.Parked, After: 2}, []int64{3, 4, 5}},
			{"Limit", engine.ListRequest{Queue: name, Status: job.Parked, Limit: 2}, []int64{1, 2}},
			{"AfterLimit", engine.ListRequest{Queue: name, Status: job.Parked, After: 2, Limit: 2}, []int64{3, 4}},
			{"AfterAll", engine.ListRequest{Queue: name, Status: job.Parked, After: 5}, nil},
			{"OtherQueue", engine.ListRequest{Queue: other, Status: job.Parked}, []int64{1}},
		}
		for _, c := range cases {
			got, err := st.ListJobs(ctx, c.req)
			if err != nil {
				t.Errorf("%s: ListJobs: %v", c.name, err)
				continue
			}
			if !equalTickets(got, c.want...) {
				t.Errorf("%s: tickets %v, want %v", c.name, tickets(got), c.want)
			}
			for _, j := range got {
				if j.Queue != c.req.Queue || j.Status != c.req.Status {
					t.Errorf("%s: listed %s/%s in status %s", c.name, j.Queue, j.ID, j.Status)
				}
			}
		}
		got, err := st.ListJobs(ctx, engine.ListRequest{Queue: name, Status: job.Parked, Limit: 1})
		if err != nil || len(got) != 1 {
			t.Fatalf("ListJobs: %v, %v", got, err)
		}
		if d := diffJob(got[0], jobs[1]); d != "" {
			t.Errorf("listed record: %s", d)
		}
		for _, s := range []job.Status{job.Queued, job.Running, job.Succeeded, job.Cancelled} {
			_, err := st.ListJobs(ctx, engine.ListRequest{Queue: name, Status: s})
			wantErr(t, "ListJobs("+string(s)+")", err, engine.ErrNotListed)
		}
	})

	// A job leaves the list when it leaves a listed status, and enters it
	// when it comes to one: the index follows every UpdateJob.
	t.Run("ListFollowsUpdates", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name := queueName(t)
		p := newJob(name, "p", 1, job.Parked)
		createJobs(t, st, p)
		q := p
		q.Status = job.Queued
		if err := st.UpdateJob(ctx, q, p.Version()); err != nil {
			t.Fatal(err)
		}
		if got, err := st.ListJobs(ctx, engine.ListRequest{Queue: name, Status: job.Parked}); err != nil || len(got) != 0 {
			t.Errorf("parked list after the job was queued: %v, %v; want none", tickets(got), err)
		}
		r := q
		r.Status, r.StartedAt = job.Running, base
		if err := st.UpdateJob(ctx, r, q.Version()); err != nil {
			t.Fatal(err)
		}
		f := r
		f.Status, f.FinishedAt, f.LastError = job.Failed, base, "boom"
		if err := st.UpdateJob(ctx, f, r.Version()); err != nil {
			t.Fatal(err)
		}
		if got, err := st.ListJobs(ctx, engine.ListRequest{Queue: name, Status: job.Failed}); err != nil || !equalTickets(got, 1) {
			t.Errorf("failed list: %v, %v; want [1]", tickets(got), err)
		}
	})

	t.Run("Rerun", func(t *testing.T) {
		// A dead letter run again on request (engine.Retry): failed, with
		// a result and a retention, back to queued at a new ticket. It
		// leaves the failed list, loses its expiry, and keeps the fields
		// of a rerun; its result, written with the outcome, comes back
		// as written.
		st := newState(t)
		ctx := t.Context()
		name := queueName(t)
		f := newJob(name, "f", 3, job.Failed)
		f.Attempt, f.FinishedAt, f.ExpiresAt, f.LastError = 3, base, farFuture, "boom"
		f.Result, f.ResultDropped = []byte(`{"status":503,"body":"down"}`), 0
		createJobs(t, st, f)
		if d := diffJob(getJob(t, st, name, "f"), f); d != "" {
			t.Errorf("failed job with a result: %s", d)
		}
		if got, err := st.ListJobs(ctx, engine.ListRequest{Queue: name, Status: job.Failed}); err != nil || !equalTickets(got, 3) {
			t.Fatalf("failed list: %v, %v; want [3]", tickets(got), err)
		}
		r := f
		r.Status, r.Ticket, r.Attempt, r.RerunFrom, r.Reruns = job.Queued, 9, 4, 3, 1
		r.FinishedAt, r.ExpiresAt, r.Result, r.ResultDropped = time.Time{}, time.Time{}, nil, 0
		if err := st.UpdateJob(ctx, r, f.Version()); err != nil {
			t.Fatal(err)
		}
		if d := diffJob(getJob(t, st, name, "f"), r); d != "" {
			t.Errorf("rerun job: %s", d)
		}
		if got, err := st.ListJobs(ctx, engine.ListRequest{Queue: name, Status: job.Failed}); err != nil || len(got) != 0 {
			t.Errorf("failed list after the rerun: %v, %v; want none", tickets(got), err)
		}
		// A second rerun from the stale failed version is refused.
		again := r
		again.Ticket = 10
		wantErr(t, "rerun from a stale version", st.UpdateJob(ctx, again, f.Version()), engine.ErrConflict)
		// A result too large to keep is recorded by its size.
		big := r
		big.Status, big.StartedAt = job.Running, base
		if err := st.UpdateJob(ctx, big, r.Version()); err != nil {
			t.Fatal(err)
		}
		done := big
		done.Status, done.FinishedAt, done.ExpiresAt, done.ResultDropped = job.Succeeded, base, farFuture, job.MaxResult+1
		if err := st.UpdateJob(ctx, done, big.Version()); err != nil {
			t.Fatal(err)
		}
		if d := diffJob(getJob(t, st, name, "f"), done); d != "" {
			t.Errorf("succeeded job with a dropped result: %s", d)
		}
	})

	t.Run("ListPages", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name := queueName(t)
		const n = 105
		jobs := make([]job.Job, n)
		for i := range jobs {
			jobs[i] = newJob(name, fmt.Sprintf("j%03d", i), int64(n-i), job.Parked)
		}
		createJobs(t, st, jobs...)
		first, err := st.ListJobs(ctx, engine.ListRequest{Queue: name, Status: job.Parked})
		if err != nil {
			t.Fatal(err)
		}
		if len(first) != 100 {
			t.Errorf("ListJobs without limit gave %d jobs, want 100", len(first))
		}
		var all []int64
		after := int64(0)
		for page := 0; page < 20; page++ {
			got, err := st.ListJobs(ctx, engine.ListRequest{Queue: name, Status: job.Parked, After: after, Limit: 30})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 {
				break
			}
			all = append(all, tickets(got)...)
			after = got[len(got)-1].Ticket
		}
		if len(all) != n || !slices.IsSorted(all) || all[0] != 1 || all[n-1] != n {
			t.Errorf("paging with After gave %d tickets %v…, want 1..%d in order", len(all), all[:min(len(all), 5)], n)
		}
	})

	t.Run("Expired", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name := queueName(t)
		old := newJob(name, "old", 1, job.Failed)
		old.FinishedAt, old.ExpiresAt = longAgo, longAgo.Add(time.Hour)
		kept := newJob(name, "kept", 2, job.Failed)
		kept.FinishedAt, kept.ExpiresAt = base, farFuture
		forever := newJob(name, "forever", 3, job.Failed)
		createJobs(t, st, old, kept, forever)

		got, err := st.ListJobs(ctx, engine.ListRequest{Queue: name, Status: job.Failed})
		if err != nil {
			t.Fatal(err)
		}
		if !equalTickets(got, 2, 3) {
			t.Errorf("ListJobs listed tickets %v, want [2 3] (ticket 1 expired)", tickets(got))
		}
		_, err = st.GetJob(ctx, job.Ref{Queue: name, ID: "old"})
		wantErr(t, "GetJob of an expired job", err, engine.ErrJobNotFound)
		getJob(t, st, name, "kept")
	})

	// An expired job is absent, whenever TTL gets to deleting it: its id
	// can be enqueued again, and the new job replaces the old record
	// (for a queue's own generation and for a later one alike).
	t.Run("ExpiredIDReused", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name := queueName(t)
		var olds, news []job.Job
		for i, gen := range []int64{0, 3} {
			old := newJob(name, fmt.Sprintf("old-gen%d", gen), int64(i+1), job.Succeeded)
			old.Gen, old.FinishedAt, old.ExpiresAt = gen, longAgo, longAgo.Add(time.Hour)
			olds = append(olds, old)
			j := newJob(name, old.ID, int64(i+10), job.Parked)
			j.Gen = gen
			news = append(news, j)
		}
		live := newJob(name, "live", 5, job.Succeeded)
		live.FinishedAt, live.ExpiresAt = base, farFuture
		createJobs(t, st, append(olds, live)...)

		created, err := st.CreateJobs(ctx, append(slices.Clone(news), newJob(name, "live", 20, job.Queued)))
		if err != nil {
			t.Fatalf("CreateJobs over expired records: %v", err)
		}
		if want := []bool{true, true, false}; !slices.Equal(created, want) {
			t.Errorf("CreateJobs over two expired records and a live one = %v, want %v", created, want)
		}
		for _, want := range news {
			if d := diffJob(getJob(t, st, name, want.ID), want); d != "" {
				t.Errorf("GetJob(%s) after its expired id was reused: %s", want.ID, d)
			}
		}
		if got := getJob(t, st, name, "live"); got.Ticket != live.Ticket {
			t.Errorf("a live job's id was taken over: ticket %d, want %d", got.Ticket, live.Ticket)
		}
		// The new record carries no expiry of the old one.
		got, err := st.ListJobs(ctx, engine.ListRequest{Queue: name, Status: job.Parked})
		if err != nil || !equalTickets(got, 10) {
			t.Errorf("ListJobs(parked) = %v, %v; want the reused id's ticket 10", tickets(got), err)
		}
	})

	t.Run("Count", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name, other := queueName(t), queueName(t)
		var jobs []job.Job
		for i, s := range []job.Status{job.Queued, job.Queued, job.Queued, job.Parked, job.Running, job.Failed, job.Failed} {
			jobs = append(jobs, newJob(name, fmt.Sprintf("j%d", i), int64(i+1), s))
		}
		jobs = append(jobs, newJob(other, "x", 1, job.Queued))
		createJobs(t, st, jobs...)
		want := map[job.Status]int{job.Parked: 1, job.Failed: 2}
		for _, s := range job.Statuses {
			n, err := st.CountJobs(ctx, name, 0, s)
			if !s.Listed() {
				wantErr(t, "CountJobs("+string(s)+")", err, engine.ErrNotListed)
				continue
			}
			if err != nil {
				t.Errorf("CountJobs(%s): %v", s, err)
				continue
			}
			if n != want[s] {
				t.Errorf("CountJobs(%s) = %d, want %d", s, n, want[s])
			}
		}
		if n, err := st.CountJobs(ctx, queueName(t), 0, job.Parked); err != nil || n != 0 {
			t.Errorf("CountJobs of an empty queue = %d, %v; want 0, nil", n, err)
		}
	})

	// A queue deleted and created again under its name is a new
	// generation: a job of the old one under a new job's id is replaced,
	// not reported as existing; lists and counts of one generation leave
	// out the other's jobs; a write that expects one generation does not
	// touch a record of the other.
	t.Run("Generations", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name := queueName(t)
		const oldGen, newGen = 7, 1 << 40
		gen := func(j job.Job, g int64) job.Job { j.Gen = g; return j }
		oldA, oldB := gen(newJob(name, "a", 5, job.Parked), oldGen), gen(newJob(name, "b", 6, job.Failed), oldGen)
		createJobs(t, st, oldA, oldB)
		if d := diffJob(getJob(t, st, name, "a"), oldA); d != "" || getJob(t, st, name, "a").Gen != oldGen {
			t.Errorf("old job a: %s (gen %d)", d, getJob(t, st, name, "a").Gen)
		}

		newA := gen(newJob(name, "a", 1, job.Parked), newGen)
		created, err := st.CreateJobs(ctx, []job.Job{newA})
		if err != nil {
			t.Fatalf("CreateJobs: %v", err)
		}
		if !created[0] {
			t.Errorf("a job of a new generation over an old one's id: created = false, want true")
		}
		if got := getJob(t, st, name, "a"); got.Gen != newGen || diffJob(got, newA) != "" {
			t.Errorf("job a after the new generation's create: gen %d, %s", got.Gen, diffJob(got, newA))
		}
		if created, err := st.CreateJobs(ctx, []job.Job{gen(newJob(name, "a", 2, job.Queued), newGen)}); err != nil || created[0] {
			t.Errorf("CreateJobs of an existing id in its generation = %v, %v; want false", created, err)
		}

		for _, c := range []struct {
			gen    int64
			status job.Status
			want   []int64
		}{{newGen, job.Parked, []int64{1}}, {newGen, job.Failed, nil}, {oldGen, job.Failed, []int64{6}}, {oldGen, job.Parked, nil}} {
			got, err := st.ListJobs(ctx, engine.ListRequest{Queue: name, Gen: c.gen, Status: c.status})
			if err != nil || !equalTickets(got, c.want...) {
				t.Errorf("ListJobs(gen %d, %s) = %v, %v; want tickets %v", c.gen, c.status, tickets(got), err, c.want)
			}
			if n, err := st.CountJobs(ctx, name, c.gen, c.status); err != nil || n != len(c.want) {
				t.Errorf("CountJobs(gen %d, %s) = %d, %v; want %d", c.gen, c.status, n, err, len(c.want))
			}
		}

		stale := oldA
		stale.Status = job.Cancelled
		wantErr(t, "UpdateJob from the old generation's version", st.UpdateJob(ctx, stale, oldA.Version()), engine.ErrConflict)
		if got := getJob(t, st, name, "a"); got.Gen != newGen || got.Status != job.Parked {
			t.Errorf("job a changed by an old generation's write: gen %d, %s", got.Gen, got.Status)
		}

		// Generations are ordered: a create of an older generation (an
		// enqueue that took its tickets before the queue was deleted and
		// created again) never replaces a newer generation's job.
		if created, err := st.CreateJobs(ctx, []job.Job{gen(newJob(name, "a", 9, job.Queued), oldGen)}); err != nil || created[0] {
			t.Errorf("CreateJobs of an older generation over a newer one's job = %v, %v; want false", created, err)
		}
		if got := getJob(t, st, name, "a"); got.Gen != newGen || got.Ticket != 1 {
			t.Errorf("job a replaced by an older generation's create: gen %d, ticket %d", got.Gen, got.Ticket)
		}

		// A random generation (a queue created before generations were
		// ordered) is older than every ordered one, and never replaces
		// an ordered one's job.
		random := engine.RandomGens + 12345
		if created, err := st.CreateJobs(ctx, []job.Job{gen(newJob(name, "a", 11, job.Queued), random)}); err != nil || created[0] {
			t.Errorf("CreateJobs of a random generation over an ordered one's job = %v, %v; want false", created, err)
		}
		createJobs(t, st, gen(newJob(name, "r", 12, job.Queued), random))
		if created, err := st.CreateJobs(ctx, []job.Job{gen(newJob(name, "r", 13, job.Queued), newGen)}); err != nil || !created[0] {
			t.Errorf("CreateJobs of an ordered generation over a random one's job = %v, %v; want true", created, err)
		}
	})
}

// testMoves checks that UpdateJob makes exactly the status changes
// job.CanMove allows: every other one is refused with job.ErrIllegalMove
// and leaves the record as it was.
func testMoves(t *testing.T, newState func(t *testing.T) engine.State) {
	st := newState(t)
	ctx := t.Context()
	name := queueName(t)
	type move struct{ from, to job.Status }
	var moves []move
	var jobs []job.Job
	for _, from := range job.Statuses {
		for _, to := range job.Statuses {
			m := move{from, to}
			moves = append(moves, m)
			jobs = append(jobs, newJob(name, fmt.Sprintf("%s-%s", from, to), int64(len(jobs)+1), from))
		}
	}
	createJobs(t, st, jobs...)
	for i, m := range moves {
		j := jobs[i]
		moved := j
		moved.Status = m.to
		err := st.UpdateJob(ctx, moved, j.Version())
		if job.CanMove(m.from, m.to) {
			if err != nil {
				t.Errorf("%s to %s: %v", m.from, m.to, err)
			} else if d := diffJob(getJob(t, st, name, j.ID), moved); d != "" {
				t.Errorf("%s to %s: %s", m.from, m.to, d)
			}
			continue
		}
		wantErr(t, fmt.Sprintf("%s to %s", m.from, m.to), err, job.ErrIllegalMove)
		wantUnchanged(t, st, j)
	}
}
