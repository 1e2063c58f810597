package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// maxCount is the most jobs one `slotq enqueue --count` makes.
const maxCount = 1_000_000

// numbered is the placeholder --count replaces with a job's number (1 to
// N) in --id and --payload.
const numbered = "{n}"

// countedJobs are the n jobs of --count: spec each time, with numbered in
// its id and its payload's text replaced by the job's number. An id
// without the placeholder would name one job n times: refused.
func countedJobs(spec api.Spec, n int) ([]api.Spec, error) {
	if n < 1 || n > maxCount {
		return nil, &clikit.UsageError{Code: "invalid_count", Field: "count", Msg: fmt.Sprintf("--count must be 1 to %d", maxCount)}
	}
	if n > 1 && spec.ID != "" && !strings.Contains(spec.ID, numbered) {
		return nil, &clikit.UsageError{Code: "invalid_id", Field: "job.id",
			Msg: fmt.Sprintf("--id %q with --count %d names one job %d times: put %s in it (such as --id 'welcome-%s') for one id a job", spec.ID, n, n, numbered, numbered)}
	}
	jobs := make([]api.Spec, n)
	for i := range jobs {
		j := spec
		num := strconv.Itoa(i + 1)
		j.ID = strings.ReplaceAll(spec.ID, numbered, num)
		if bytes.Contains(spec.Payload, []byte(numbered)) {
			p := bytes.ReplaceAll(spec.Payload, []byte(numbered), []byte(num))
			if !json.Valid(p) {
				return nil, clikit.Usagef("--payload with %s replaced by %s is not JSON: %s", numbered, num, p)
			}
			j.Payload = p
		}
		jobs[i] = j
	}
	return jobs, nil
}

// linedJobs reads --from's jobs: JSON lines, one api.Spec each (blank
// lines skipped). A line that names neither a kind nor a target takes
// def's, as do its key and priority when it leaves them out.
func linedJobs(r io.Reader, name string, def api.Spec) ([]api.Spec, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 2<<20)
	var jobs []api.Spec
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var s api.Spec
		if err := dec.Decode(&s); err != nil {
			return nil, &clikit.UsageError{Code: "invalid_json", Field: fmt.Sprintf("jobs[%d]", len(jobs)), Msg: fmt.Sprintf("--from %s line %d: %v", name, n, err)}
		}
		if s.Kind == "" && s.Target == "" {
			s.Kind, s.Target = def.Kind, def.Target
		}
		if s.Key == "" {
			s.Key = def.Key
		}
		if s.Priority == 0 {
			s.Priority = def.Priority
		}
		jobs = append(jobs, s)
	}
	if err := sc.Err(); err != nil {
		return nil, clikit.Usagef("--from %s: %v", name, err)
	}
	if len(jobs) == 0 {
		return nil, &clikit.UsageError{Code: "no_jobs", Field: "jobs", Msg: fmt.Sprintf("--from %s holds no job", name)}
	}
	return jobs, nil
}

// readFrom opens --from's FILE, or stdin for "-".
func readFrom(v string) (io.Reader, func() error, error) {
	if v == "-" {
		return stdin, func() error { return nil }, nil
	}
	f, err := os.Open(v)
	if err != nil {
		return nil, nil, clikit.Usagef("--from: %v", err)
	}
	return f, f.Close, nil
}

// enqueueMany enqueues jobs on in's queue in calls of up to api.MaxBatch
// (the first creates the queue, with in's limit, where it is missing),
// showing its progress on a terminal, and prints every answer as one
// enqueue's: a table of up to manyRows jobs, else a summary; with --json
// the answer of one call that took them all. A call that fails stops it:
// the jobs of the calls before are enqueued, and it says how many; sent
// again with the same ids they are not enqueued twice.
func (c *stackCmd) enqueueMany(ctx context.Context, in client.EnqueueInput, jobs []api.Spec) int {
	cl, err := c.Conn.Client(ctx)
	if err != nil {
		return c.Fail(err)
	}
	c.noteKeptLimit(ctx, cl, &in)
	progress := c.progress(len(jobs))
	all := api.EnqueueResult{Queue: in.Queue, Jobs: make([]api.Accepted, 0, len(jobs))}
	for len(all.Jobs) < len(jobs) {
		batch := jobs[len(all.Jobs):min(len(jobs), len(all.Jobs)+api.MaxBatch)]
		call := in
		call.Job, call.Jobs = nil, batch
		out, err := cl.Enqueue(ctx, &call)
		if err != nil {
			progress(-1)
			if len(all.Jobs) > 0 {
				fmt.Fprintf(c.Stderr, "slotq %s: %d of %d jobs enqueued before this call failed\n", c.Name, len(all.Jobs), len(jobs))
			}
			return c.Fail(c.Conn.Explain(err))
		}
		all.Queue = out.Queue
		all.Jobs = append(all.Jobs, out.Jobs...)
		progress(len(all.Jobs))
	}
	progress(-1)
	c.Print(all, func(w io.Writer) { printMany(w, all) })
	return clikit.ExitOK
}

// manyRows is the most jobs enqueueMany lists one by one.
const manyRows = 20

// printMany prints what enqueueMany enqueued: each job, or a summary.
func printMany(w io.Writer, res api.EnqueueResult) {
	if len(res.Jobs) <= manyRows {
		clikit.Row(w, "JOB ID", "TICKET", "SLOT AT", "POSITION", "STATUS")
		for _, a := range res.Jobs {
			clikit.Row(w, a.JobID, a.Ticket, clikit.Time(a.SlotAt), a.Position, acceptedStatus(a))
		}
		return
	}
	var waiting, before int
	var first, last api.Accepted
	for _, a := range res.Jobs {
		switch {
		case a.Existing:
			before++
			continue
		case a.Status == api.StatusWaiting:
			waiting++
		}
		if first.JobID == "" || a.Ticket < first.Ticket {
			first = a
		}
		if a.Ticket > last.Ticket {
			last = a
		}
	}
	fmt.Fprintf(w, "%d jobs on queue %s: %d new, %d enqueued before", len(res.Jobs), res.Queue, len(res.Jobs)-before, before)
	if waiting > 0 {
		fmt.Fprintf(w, ", %d in the waiting room", waiting)
	}
	fmt.Fprintln(w)
	if first.JobID != "" {
		fmt.Fprintf(w, "tickets %d to %d; first slot %s, last %s\n", first.Ticket, last.Ticket, clikit.Time(first.SlotAt), clikit.Time(last.SlotAt))
	}
}

// acceptedStatus is a's status as the enqueue table shows it.
func acceptedStatus(a api.Accepted) string {
	switch {
	case a.Existing:
		return string(a.Status) + " (enqueued before)"
	case a.Status == api.StatusDebounced:
		return string(a.Status) + " into " + a.DebouncedInto
	}
	return string(a.Status)
}

// startsAs is the id of the job that starts for a: its own, or, debounced,
// the job's it joined.
func startsAs(a api.Accepted) string {
	if a.Status == api.StatusDebounced {
		return a.DebouncedInto
	}
	return a.JobID
}

// progress returns what shows enqueueMany's progress on stderr, when it
// is a terminal: done jobs of total, or -1 to end the line.
func (c *stackCmd) progress(total int) func(done int) {
	f, ok := c.Stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || total <= api.MaxBatch {
		return func(int) {}
	}
	shown := false
	return func(done int) {
		if done < 0 {
			if shown {
				fmt.Fprintln(f)
			}
			return
		}
		shown = true
		fmt.Fprintf(f, "\renqueued %d of %d jobs", done, total)
	}
}
