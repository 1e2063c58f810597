package sqstransport_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/slotq/slotq/internal/dev/awsmeter"
	"github.com/slotq/slotq/internal/dev/motoserver"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/sqstransport"
)

// recorder passes calls to SQS and records the SendMessageBatch entries.
type recorder struct {
	sqstransport.SQSAPI
	mu      sync.Mutex
	batches [][]types.SendMessageBatchRequestEntry
}

func (r *recorder) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	r.mu.Lock()
	r.batches = append(r.batches, slices.Clone(in.Entries))
	r.mu.Unlock()
	return r.SQSAPI.SendMessageBatch(ctx, in, opts...)
}

var queueSeq atomic.Int64

// motoQueue returns a client for moto_server and a new slot queue with a
// visibility timeout of 1s.
func motoQueue(t *testing.T) (*sqs.Client, string) {
	t.Helper()
	motoserver.Require(t)
	cfg, err := config.LoadDefaultConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg)
	name := regexp.MustCompile(`[^A-Za-z0-9_-]`).ReplaceAllString(t.Name(), "-")
	name = fmt.Sprintf("%.60s-%d", name, queueSeq.Add(1))
	url, dlq, err := sqstransport.CreateQueues(t.Context(), client, name, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if url == "" || dlq == "" || url == dlq {
		t.Fatalf("CreateQueues = %q, %q", url, dlq)
	}
	return client, url
}

// receipt is one delivery seen by a receive loop.
type receipt struct {
	msg events.SQSMessage
	at  time.Time
}

// collect runs Receive in the background and returns a function that waits
// until until(receipts) holds (or fails the test after timeout), stops the
// loop and returns the receipts.
func collect(t *testing.T, tr *sqstransport.Transport, fail func(events.SQSMessage, int) bool, until func([]receipt) bool) func(timeout time.Duration) []receipt {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	var got []receipt
	seen := map[string]int{}
	done := make(chan error, 1)
	go func() {
		done <- tr.Receive(ctx, sqstransport.ReceiveOptions{WaitTime: time.Second}, func(_ context.Context, batch []events.SQSMessage) events.SQSEventResponse {
			var resp events.SQSEventResponse
			mu.Lock()
			defer mu.Unlock()
			for _, m := range batch {
				seen[m.MessageId]++
				got = append(got, receipt{m, time.Now()})
				if fail != nil && fail(m, seen[m.MessageId]) {
					resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
				}
			}
			return resp
		})
	}()
	return func(timeout time.Duration) []receipt {
		t.Helper()
		deadline := time.NewTimer(timeout)
		defer deadline.Stop()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
	wait:
		for {
			mu.Lock()
			ok := until(got)
			mu.Unlock()
			if ok {
				break
			}
			select {
			case <-tick.C:
			case <-deadline.C:
				break wait
			}
		}
		cancel()
		// Receive stops once its context ends: it returns, whatever its
		// long poll was doing (a deadline bounds the wait, not a figure).
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Receive: %v", err)
			}
		case <-time.After(testenv.Patience):
			t.Fatalf("Receive did not stop in %v after its context ended", testenv.Patience)
		}
		mu.Lock()
		defer mu.Unlock()
		if !until(got) {
			t.Fatalf("timed out after %v with %d receipts", timeout, len(got))
		}
		return slices.Clone(got)
	}
}

func atLeast(n int) func([]receipt) bool {
	return func(r []receipt) bool { return len(r) >= n }
}

func queueDepth(t *testing.T, client *sqs.Client, url string) (visible, inFlight, delayed int) {
	t.Helper()
	out, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := func(name types.QueueAttributeName) int {
		v, _ := strconv.Atoi(out.Attributes[string(name)])
		return v
	}
	return n(types.QueueAttributeNameApproximateNumberOfMessages),
		n(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
		n(types.QueueAttributeNameApproximateNumberOfMessagesDelayed)
}

func TestMotoBatchesOf25(t *testing.T) {
	client, url := motoQueue(t)
	m := awsmeter.NewSQS(client)
	rec := &recorder{SQSAPI: m}
	tr := sqstransport.New(rec, url, sqstransport.Options{})
	if err := tr.Send(t.Context(), messages("emails", 25, 10, 0)); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, b := range rec.batches {
		sizes = append(sizes, len(b))
	}
	if !slices.Equal(sizes, []int{10, 10, 5}) {
		t.Errorf("entries per call = %v, want [10 10 5]", sizes)
	}

	got := collect(t, tr, nil, atLeast(25))(testenv.Patience)
	ids := map[string]bool{}
	for _, r := range got {
		m := r.msg
		env, err := sqstransport.EnvelopeOf(m)
		if err != nil {
			t.Fatal(err)
		}
		ids[env.JobID] = true
		if m.EventSource != "aws:sqs" || m.AWSRegion != "us-east-1" || m.EventSourceARN == "" ||
			m.ReceiptHandle == "" || m.Md5OfBody == "" || m.Attributes["ApproximateReceiveCount"] != "1" ||
			m.Attributes["SentTimestamp"] == "" {
			t.Errorf("message fields missing: %+v", m)
		}
		if a := m.MessageAttributes[sqstransport.AttrQueue]; aws.ToString(a.StringValue) != "emails" || a.DataType != "String" {
			t.Errorf("attribute %s = %+v", sqstransport.AttrQueue, a)
		}
		if a := m.MessageAttributes[sqstransport.AttrJobID]; aws.ToString(a.StringValue) != env.JobID {
			t.Errorf("attribute %s = %+v, want %s", sqstransport.AttrJobID, a, env.JobID)
		}
	}
	if len(ids) != 25 || len(got) != 25 {
		t.Errorf("received %d messages of %d jobs, want 25 of 25", len(got), len(ids))
	}
	u := m.Usage()
	if u.SendCalls != 3 || u.Sent != 25 || u.Received != 25 || u.Deleted != 25 || u.ReceiveCalls < 3 || u.DeleteCalls < 3 {
		t.Errorf("usage = %+v", u)
	}
	if v, f, d := queueDepth(t, client, url); v+f+d != 0 {
		t.Errorf("queue holds %d visible, %d in flight, %d delayed; want empty", v, f, d)
	}
}

func TestMotoDelay(t *testing.T) {
	client, url := motoQueue(t)
	tr := sqstransport.New(client, url, sqstransport.Options{})
	msgs := messages("q", 2, 0, 0)
	msgs[1].Delay = 2500 * time.Millisecond // sent as 2s
	start := time.Now()
	if err := tr.Send(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	got := collect(t, tr, nil, atLeast(2))(testenv.Patience)
	// The delayed message comes after the other and not before its
	// delay; how soon each came (moto answers late on a loaded host) is
	// only logged.
	arrived := map[string]time.Duration{}
	for _, r := range got {
		env, _ := sqstransport.EnvelopeOf(r.msg)
		if _, ok := arrived[env.JobID]; !ok {
			arrived[env.JobID] = r.at.Sub(start)
		}
	}
	undelayed, okU := arrived["j-0"]
	delayed, okD := arrived["j-1"]
	if !okU || !okD || delayed < 1900*time.Millisecond || delayed < undelayed {
		t.Errorf("arrivals %v; want j-0, then j-1 (delayed 2s) at least 1.9s after the send", arrived)
	}
	t.Logf("the undelayed message arrived after %v, the delayed one after %v", undelayed, delayed)
}

func TestMotoRoundingAndClamp(t *testing.T) {
	client, url := motoQueue(t)
	rec := &recorder{SQSAPI: client}
	tr := sqstransport.New(rec, url, sqstransport.Options{})
	delays := []time.Duration{1900 * time.Millisecond, 500 * time.Millisecond, 15 * time.Minute, 20 * time.Minute, -time.Second}
	msgs := messages("q", len(delays), 0, 0)
	for i, d := range delays {
		msgs[i].Delay = d
	}
	if err := tr.Send(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	var got []int32
	for _, e := range rec.batches[0] {
		got = append(got, e.DelaySeconds)
	}
	if want := []int32{1, 0, 900, 900, 0}; !slices.Equal(got, want) {
		t.Errorf("DelaySeconds = %v, want %v", got, want)
	}
	if _, _, delayed := queueDepth(t, client, url); delayed < 2 {
		t.Errorf("%d delayed messages, want at least the two of 900s", delayed)
	}
}

func TestMotoTooLarge(t *testing.T) {
	client, url := motoQueue(t)
	rec := &recorder{SQSAPI: client}
	tr := sqstransport.New(rec, url, sqstransport.Options{})
	msgs := messages("q", 3, 0, 0)
	msgs[1].Envelope = sizedEnvelope(t, "huge", sqstransport.MaxMessageSize+1)
	err := tr.Send(t.Context(), msgs)
	var tooLarge *sqstransport.TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.JobID != "huge" || tooLarge.Queue != "q" {
		t.Fatalf("err = %v, want *TooLargeError naming q/huge", err)
	}
	if len(rec.batches) != 0 {
		t.Errorf("%d SendMessageBatch calls, want none", len(rec.batches))
	}
	if v, f, d := queueDepth(t, client, url); v+f+d != 0 {
		t.Errorf("queue holds %d messages, want none", v+f+d)
	}

	// The largest message that fits goes through.
	msgs[1].Envelope = sizedEnvelope(t, "largest", sqstransport.MaxMessageSize)
	if err := tr.Send(t.Context(), msgs); err != nil {
		t.Fatalf("Send with a message of exactly %d bytes: %v", sqstransport.MaxMessageSize, err)
	}
	if len(rec.batches) != 3 {
		t.Errorf("%d calls, want 3 (the full-size message alone)", len(rec.batches))
	}
}

func TestMotoQueueMissing(t *testing.T) {
	client, url := motoQueue(t)
	missing := url + "-nope"
	tr := sqstransport.New(client, missing, sqstransport.Options{})
	err := tr.Send(t.Context(), messages("q", 3, 0, 0))
	if !errors.Is(err, sqstransport.ErrQueueMissing) {
		t.Errorf("Send: err = %v, want ErrQueueMissing", err)

	}
	var sendErr *engine.SendError
	if errors.As(err, &sendErr) {
		t.Errorf("Send: err = %v, want a plain error when nothing was sent", err)
	}
	err = tr.Receive(t.Context(), sqstransport.ReceiveOptions{WaitTime: time.Second}, func(context.Context, []events.SQSMessage) events.SQSEventResponse {
		t.Error("handler called")
		return events.SQSEventResponse{}
	})
	if !errors.Is(err, sqstransport.ErrQueueMissing) {
		t.Errorf("Receive: err = %v, want ErrQueueMissing", err)
	}
	// With the ARN given, the first ReceiveMessage finds it out.
	tr = sqstransport.New(client, missing, sqstransport.Options{QueueARN: "arn:aws:sqs:us-east-1:123456789012:nope"})
	err = tr.Receive(t.Context(), sqstransport.ReceiveOptions{WaitTime: time.Second}, nil)
	if !errors.Is(err, sqstransport.ErrQueueMissing) {
		t.Errorf("Receive with ARN: err = %v, want ErrQueueMissing", err)
	}
}

func TestMotoReceiveDeletesOnlySuccesses(t *testing.T) {
	client, url := motoQueue(t)
	m := awsmeter.NewSQS(client)
	tr := sqstransport.New(m, url, sqstransport.Options{})
	if err := tr.Send(t.Context(), messages("q", 3, 0, 0)); err != nil {
		t.Fatal(err)
	}
	jobOf := func(m events.SQSMessage) string {
		env, err := sqstransport.EnvelopeOf(m)
		if err != nil {
			t.Error(err)
		}
		return env.JobID
	}
	// j-1 fails on its first delivery only.
	fail := func(m events.SQSMessage, n int) bool { return jobOf(m) == "j-1" && n == 1 }
	var backAt time.Time
	wait := collect(t, tr, fail, func(r []receipt) bool {
		n := 0
		for _, x := range r {
			if jobOf(x.msg) == "j-1" {
				n++
				if n == 2 && backAt.IsZero() {
					backAt = x.at
				}
			}
		}
		// Wait a second past the redelivery: a success left undeleted
		// would be back by then too (visibility timeout 1s).
		return len(r) >= 4 && !backAt.IsZero() && time.Since(backAt) > 1500*time.Millisecond
	})
	got := wait(testenv.Patience)

	counts := map[string][]string{}
	var firstAt time.Time
	for _, r := range got {
		j := jobOf(r.msg)
		counts[j] = append(counts[j], r.msg.Attributes["ApproximateReceiveCount"])
		if j == "j-1" && firstAt.IsZero() {
			firstAt = r.at
		}
	}
	want := map[string][]string{"j-0": {"1"}, "j-1": {"1", "2"}, "j-2": {"1"}}
	for j, w := range want {
		if !slices.Equal(counts[j], w) {
			t.Errorf("%s: receive counts %v, want %v", j, counts[j], w)
		}
	}
	if d := backAt.Sub(firstAt); d < 900*time.Millisecond {
		t.Errorf("failed message came back after %v, before the 1s visibility timeout", d)
	}
	if v, f, d := queueDepth(t, client, url); v+f+d != 0 {
		t.Errorf("queue holds %d visible, %d in flight, %d delayed; want empty", v, f, d)
	}
	if u := m.Usage(); u.Deleted != 3 || u.Received != 4 {
		t.Errorf("usage = %+v, want 4 received and 3 deleted", u)
	}
}

func TestMotoReceiveUnknownFailureKeepsBatch(t *testing.T) {
	client, url := motoQueue(t)
	m := awsmeter.NewSQS(client)
	tr := sqstransport.New(m, url, sqstransport.Options{})
	if err := tr.Send(t.Context(), messages("q", 1, 0, 0)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	err := tr.Receive(ctx, sqstransport.ReceiveOptions{WaitTime: time.Second}, func(context.Context, []events.SQSMessage) events.SQSEventResponse {
		cancel()
		// As in Lambda, an identifier not in the batch fails it all.
		return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "not-a-message"}}}
	})
	if err != nil {
		t.Fatal(err)
	}
	if u := m.Usage(); u.Received != 1 || u.DeleteCalls != 0 {
		t.Errorf("usage = %+v, want 1 received and no deletes", u)
	}
}
