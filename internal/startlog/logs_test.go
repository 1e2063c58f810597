package startlog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// fakeLogs answers FilterLogEvents with pages of messages, and keeps the
// inputs.
type fakeLogs struct {
	pages [][]string
	err   error
	ins   []cloudwatchlogs.FilterLogEventsInput
}

func (f *fakeLogs) FilterLogEvents(_ context.Context, in *cloudwatchlogs.FilterLogEventsInput, _ ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error) {
	f.ins = append(f.ins, *in)
	if f.err != nil {
		return nil, f.err
	}
	i := 0
	if in.NextToken != nil {
		fmt.Sscan(*in.NextToken, &i)
	}
	out := &cloudwatchlogs.FilterLogEventsOutput{}
	for _, m := range f.pages[i] {
		out.Events = append(out.Events, types.FilteredLogEvent{Message: aws.String(m), Timestamp: aws.Int64(t0.Add(time.Minute).UnixMilli())})
	}
	if i+1 < len(f.pages) {
		out.NextToken = aws.String(fmt.Sprint(i + 1))
	}
	return out, nil
}

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// startLine is a worker's start line as Lambda stores it.
func startLine(queue string, ticket int64, started time.Time) string {
	slotAt := t0.Add(time.Duration(ticket) * time.Second)
	return fmt.Sprintf(`{"timestamp":%q,"level":"INFO","message":"start","queue":%q,"ticket":%d,"job_id":"j%d","slot_at":%q,"lateness_ms":%d,"attempt":1,"target":"kind:echo","requestId":"r"}`,
		started.Format(time.RFC3339Nano), queue, ticket, ticket, slotAt.Format(time.RFC3339Nano), started.Sub(slotAt).Milliseconds())
}

// Logs asks the worker's log group for the queue's start lines from since
// on, pages until it has one more than limit, and reads the lines back in
// start order; other lines that the pattern let through are skipped.
func TestLogsStarts(t *testing.T) {
	at := func(ticket int64, late time.Duration) time.Time {
		return t0.Add(time.Duration(ticket)*time.Second + late)
	}
	fake := &fakeLogs{pages: [][]string{
		{startLine("emails", 2, at(2, 3*time.Millisecond)), startLine("emails", 1, at(1, 0))},
		{}, // an empty page with a token: go on
		{`{"message":"metrics","queue":"emails"}`, "not json", startLine("other", 9, at(9, 0)), startLine("emails", 3, at(3, -time.Millisecond))},
		{startLine("emails", 4, at(4, 0))},
	}}
	l := &Logs{API: fake, LogGroup: "/aws/lambda/slotq-worker"}
	since := t0.Add(500 * time.Millisecond)
	got, more, err := l.Starts(context.Background(), "emails", since, 10)
	if err != nil || more {
		t.Fatalf("Starts: more %v, %v", more, err)
	}
	if len(got) != 4 {
		t.Fatalf("got %d starts: %+v", len(got), got)
	}
	for i, s := range got {
		if s.Ticket != int64(i+1) || s.JobID != fmt.Sprintf("j%d", i+1) || s.Attempt != 1 ||
			!s.SlotAt.Equal(t0.Add(time.Duration(i+1)*time.Second)) || s.LatenessMS != s.StartedAt.Sub(s.SlotAt).Milliseconds() {
			t.Errorf("start %d: %+v", i, s)
		}
	}
	in := fake.ins[0]
	if aws.ToString(in.LogGroupName) != "/aws/lambda/slotq-worker" || aws.ToInt64(in.StartTime) != since.UnixMilli() ||
		aws.ToString(in.FilterPattern) != `{ $.message = "start" && $.queue = "emails" }` || aws.ToInt32(in.Limit) != 11 || in.NextToken != nil {
		t.Errorf("first request %+v", in)
	}
	if len(fake.ins) != 4 || aws.ToString(fake.ins[3].NextToken) != "3" || aws.ToInt32(fake.ins[3].Limit) != 8 {
		t.Errorf("%d requests, the last %+v", len(fake.ins), fake.ins[len(fake.ins)-1])
	}

	// Cut at limit: the first ones, and more; no page read past limit+1.
	fake.ins = nil
	got, more, err = l.Starts(context.Background(), "emails", since, 2)
	if err != nil || !more || len(got) != 2 || got[0].Ticket != 1 || got[1].Ticket != 2 || len(fake.ins) != 3 {
		t.Errorf("limit 2: %+v, more %v, %v, %d requests", got, more, err, len(fake.ins))
	}
	// A start before since whose line came after it is left out.
	got, _, _ = l.Starts(context.Background(), "emails", at(2, 2*time.Millisecond), 10)
	if len(got) != 3 || got[0].Ticket != 2 {
		t.Errorf("since ticket 2's start: %+v", got)
	}

	// The API's error is the reader's, wrapped.
	denied := errors.New("AccessDeniedException: not authorized to perform logs:FilterLogEvents")
	fake.err = denied
	if _, _, err := l.Starts(context.Background(), "emails", since, 10); !errors.Is(err, denied) || !strings.Contains(err.Error(), "emails") {
		t.Errorf("error %v", err)
	}
}

// Paging stops after Scan: what was found comes back with more; nothing
// found is an error.
func TestLogsScanBudget(t *testing.T) {
	now := t0
	fake := &fakeLogs{pages: [][]string{{}, {startLine("q", 1, t0)}, {}, {}, {}}}
	l := &Logs{API: fake, LogGroup: "g", Scan: 2 * time.Second, Now: func() time.Time { now = now.Add(time.Second); return now }}
	got, more, err := l.Starts(context.Background(), "q", t0.Add(-time.Minute), 10)
	if err != nil || !more || len(got) != 1 {
		t.Errorf("got %+v, more %v, %v", got, more, err)
	}
	fake.pages = [][]string{{}, {}, {}, {}, {}}
	if _, _, err := l.Starts(context.Background(), "q", t0, 10); !errors.Is(err, ErrScanTooLong) {
		t.Errorf("nothing found: %v", err)
	}
}

// The worker's own start line (engine.Work through the JSON handler the
// functions log with) matches the filter pattern's fields and reads back
// as the start the engine reported to its observers.
func TestEngineStartLine(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: lambdacontext.ReplaceAttr}))
	ring := &Ring{}
	store := memstore.New(memstore.Options{})
	eng := testenv.NewEngine(t, engine.Options{State: store, Logger: log, Observer: ring, Lead: -1})
	ctx := context.Background()
	// A generous skew: a worker held up more than the default 2 ms
	// between its wake-up and its target's call (a busy host, -race)
	// gives its start up, and this test is about the start's line.
	if _, err := eng.CreateQueue(ctx, "emails.v2", slot.Config{Interval: time.Second, Skew: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "emails.v2", Job: &job.Spec{ID: "welcome-42", Kind: "echo", Key: "customer-7"}}); err != nil {
		t.Fatal(err)
	}
	j, err := store.GetJob(ctx, job.Ref{Queue: "emails.v2", ID: "welcome-42"})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_ = eng.Work(wctx, j.Envelope()) // no runner: the attempt fails, after its start

	want, _, _ := ring.Starts(ctx, "emails.v2", time.Time{}, 10)
	if len(want) != 1 || want[0].JobID != "welcome-42" || want[0].Ticket != 1 || want[0].Attempt != 1 || want[0].Key != "customer-7" {
		t.Fatalf("the ring kept %+v", want)
	}
	var found []Start
	for sc := bufio.NewScanner(&buf); sc.Scan(); {
		var fields map[string]any
		if err := json.Unmarshal(sc.Bytes(), &fields); err != nil {
			t.Fatalf("not JSON: %s", sc.Text())
		}
		if fields["message"] != "start" {
			continue
		}
		if fields["queue"] != "emails.v2" {
			t.Errorf("start line without the queue the pattern matches: %s", sc.Text())
		}
		s, ok := parse(sc.Text(), time.Time{}, "emails.v2")
		if !ok {
			t.Fatalf("start line not read: %s", sc.Text())
		}
		found = append(found, s)
	}
	if len(found) != 1 {
		t.Fatalf("%d start lines in\n%s", len(found), buf.String())
	}
	s, w := found[0], want[0]
	if s.JobID != w.JobID || s.Ticket != w.Ticket || s.Attempt != w.Attempt || !s.SlotAt.Equal(w.SlotAt) ||
		s.LatenessMS != w.LatenessMS || s.Key != w.Key || s.StartedAt.Before(w.StartedAt) || s.StartedAt.Sub(w.StartedAt) > time.Second {
		t.Errorf("the line reads %+v, the engine reported %+v", s, w)
	}
	// Both carry the start the gate reserved, which the handler began at
	// or after: the time the console's spacing check counts by.
	if w.GateAt.IsZero() || !s.GateAt.Equal(w.GateAt) || w.StartedAt.Before(w.GateAt) {
		t.Errorf("gate's start: the line reads %v, the engine reported %v (handler began %v)", s.GateAt, w.GateAt, w.StartedAt)
	}
}
