package sqstransport_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/sqstransport"
)

// fakeSQS answers SendMessageBatch with send; every other call panics
// through the nil embedded interface.
type fakeSQS struct {
	sqstransport.SQSAPI
	mu    sync.Mutex
	calls [][]string // entry ids of each call
	sent  int        // entries answered as successful
	send  func(call int, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error)
}

func (f *fakeSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	ids := make([]string, len(in.Entries))
	for i, e := range in.Entries {
		ids[i] = aws.ToString(e.Id)
	}
	f.calls = append(f.calls, ids)
	call := len(f.calls) - 1
	f.mu.Unlock()
	var out *sqs.SendMessageBatchOutput
	var err error
	if f.send != nil {
		out, err = f.send(call, in)
	} else {
		out = acceptAll(in)
	}
	if err == nil {
		f.mu.Lock()
		f.sent += len(out.Successful)
		f.mu.Unlock()
	}
	return out, err
}

func acceptAll(in *sqs.SendMessageBatchInput) *sqs.SendMessageBatchOutput {
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("m-" + *e.Id)})
	}
	return out
}

func envelope(queue, id string, payload string) job.Envelope {
	env := job.Envelope{
		V: job.EnvelopeVersion, Queue: queue, JobID: id, Ticket: 1,
		SlotAt: time.Date(2025, 6, 1, 14, 0, 0, 0, time.UTC), Attempt: 1, Kind: "test",
	}
	if payload != "" {
		env.Payload = json.RawMessage(payload)
	}
	return env
}

func messages(queue string, n int, payloadSize int, delay time.Duration) []engine.Message {
	payload := ""
	if payloadSize > 0 {
		payload = `"` + strings.Repeat("x", payloadSize) + `"`
	}
	msgs := make([]engine.Message, n)
	for i := range msgs {
		msgs[i] = engine.Message{Envelope: envelope(queue, fmt.Sprintf("j-%d", i), payload), Delay: delay}
	}
	return msgs
}

func TestDelaySeconds(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		want int32
	}{
		{"negative", -time.Second, 0},
		{"zero", 0, 0},
		{"under a second", 999 * time.Millisecond, 0},
		{"fraction rounds down", 1900 * time.Millisecond, 1},
		{"whole", 2 * time.Second, 2},
		{"just under max", 900*time.Second - time.Millisecond, 899},
		{"max", 15 * time.Minute, 900},
		{"over max", 901 * time.Second, 900},
		{"an hour", time.Hour, 900},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sqstransport.DelaySeconds(tt.d); got != tt.want {
				t.Errorf("DelaySeconds(%v) = %d, want %d", tt.d, got, tt.want)
			}
		})
	}
}

func TestSendBatches(t *testing.T) {
	tests := []struct {
		name        string
		n           int
		payloadSize int
		want        []int // entries per call
	}{
		{"one", 1, 0, []int{1}},
		{"ten", 10, 0, []int{10}},
		{"twenty-five", 25, 0, []int{10, 10, 5}},
		{"by bytes", 5, 100 * 1024, []int{2, 2, 1}},
		{"by bytes and count", 12, 20 * 1024, []int{10, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeSQS{}
			tr := sqstransport.New(fake, "https://sqs.test/1/q", sqstransport.Options{})
			if err := tr.Send(t.Context(), messages("q", tt.n, tt.payloadSize, 0)); err != nil {
				t.Fatal(err)
			}
			var got []int
			next := 0
			for _, ids := range fake.calls {
				got = append(got, len(ids))
				for _, id := range ids {
					if id != strconv.Itoa(next) {
						t.Errorf("entry id %s, want %d (ids are message indexes, in order)", id, next)
					}
					next++
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("entries per call = %v, want %v", got, tt.want)
			}
			if fake.sent != tt.n {
				t.Errorf("%d messages accepted, want %d", fake.sent, tt.n)
			}
		})
	}
}

func TestSendEmpty(t *testing.T) {
	fake := &fakeSQS{}
	tr := sqstransport.New(fake, "https://sqs.test/1/q", sqstransport.Options{})
	if err := tr.Send(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if len(fake.calls) != 0 {
		t.Errorf("%d calls for no messages", len(fake.calls))
	}
}

// sizedEnvelope returns an envelope whose SQS message is exactly size bytes.
func sizedEnvelope(t *testing.T, id string, size int) job.Envelope {
	t.Helper()
	base := envelope("q", id, `""`)
	// The message grows by one byte per payload character.
	small := messageSize(t, base)
	return envelope("q", id, `"`+strings.Repeat("x", size-small)+`"`)
}

func messageSize(t *testing.T, env job.Envelope) int {
	t.Helper()
	env.Payload = json.RawMessage(`"` + strings.Repeat("x", sqstransport.MaxMessageSize) + `"`)
	var tooLarge *sqstransport.TooLargeError
	if !errors.As(sqstransport.CheckSize(env), &tooLarge) {
		t.Fatal("CheckSize accepted an envelope over the limit")
	}
	return tooLarge.Size - sqstransport.MaxMessageSize
}

func TestCheckSize(t *testing.T) {
	if err := sqstransport.CheckSize(sizedEnvelope(t, "fits", sqstransport.MaxMessageSize)); err != nil {
		t.Errorf("envelope of exactly %d bytes: %v", sqstransport.MaxMessageSize, err)
	}
	err := sqstransport.CheckSize(sizedEnvelope(t, "big", sqstransport.MaxMessageSize+1))
	var tooLarge *sqstransport.TooLargeError
	if !errors.As(err, &tooLarge) {
		t.Fatalf("err = %v, want *TooLargeError", err)
	}
	if tooLarge.Queue != "q" || tooLarge.JobID != "big" || tooLarge.Size != sqstransport.MaxMessageSize+1 {
		t.Errorf("TooLargeError = %+v", tooLarge)
	}
	if !strings.Contains(err.Error(), "q/big") {
		t.Errorf("error %q does not name the job", err)
	}
}

func TestSendTooLargeSendsNothing(t *testing.T) {
	fake := &fakeSQS{}
	tr := sqstransport.New(fake, "https://sqs.test/1/q", sqstransport.Options{})
	msgs := messages("q", 15, 0, 0)
	msgs[12].Envelope = sizedEnvelope(t, "huge", sqstransport.MaxMessageSize+1)
	err := tr.Send(t.Context(), msgs)
	var tooLarge *sqstransport.TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.JobID != "huge" {
		t.Fatalf("err = %v, want *TooLargeError for job huge", err)
	}
	if len(fake.calls) != 0 {
		t.Errorf("%d calls made; want none", len(fake.calls))
	}
}

func TestSendPartialFailure(t *testing.T) {
	// Entry 3 is the sender's fault; 5 fails once on SQS's side; 7 fails
	// on SQS's side every time.
	fails := map[string]int{"5": 1, "7": 99}
	fake := &fakeSQS{send: func(call int, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		out := &sqs.SendMessageBatchOutput{}
		for _, e := range in.Entries {
			id := aws.ToString(e.Id)
			switch {
			case id == "3":
				out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InvalidMessageContents"), Message: aws.String("bad"), SenderFault: true})
			case fails[id] > 0:
				fails[id]--
				out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("try again")})
			default:
				out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
			}
		}
		return out, nil
	}}
	tr := sqstransport.New(fake, "https://sqs.test/1/q", sqstransport.Options{SendAttempts: 3, RetryBackoff: time.Millisecond})
	err := tr.Send(t.Context(), messages("q", 10, 0, 0))
	var sendErr *engine.SendError
	if !errors.As(err, &sendErr) {
		t.Fatalf("err = %v, want *engine.SendError", err)
	}
	if got := slices.Sorted(maps.Keys(sendErr.Failed)); !slices.Equal(got, []int{3, 7}) {
		t.Errorf("failed indexes = %v, want [3 7]", got)
	}
	for i, code := range map[int]string{3: "InvalidMessageContents", 7: "InternalError"} {
		var entryErr *sqstransport.EntryError
		if !errors.As(sendErr.Failed[i], &entryErr) || entryErr.Code != code {
			t.Errorf("failed[%d] = %v, want an EntryError %s", i, sendErr.Failed[i], code)
		}
		if !strings.Contains(sendErr.Failed[i].Error(), fmt.Sprintf("q/j-%d", i)) {
			t.Errorf("failed[%d] = %q does not name the job", i, sendErr.Failed[i])
		}
	}
	want := [][]string{{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, {"5", "7"}, {"7"}}
	if !slices.EqualFunc(fake.calls, want, slices.Equal) {
		t.Errorf("calls = %v, want %v", fake.calls, want)
	}
	if fake.sent != 8 {
		t.Errorf("%d messages accepted, want 8", fake.sent)
	}
}

func TestSendCallError(t *testing.T) {
	boom := errors.New("boom")
	failOn := func(n int) func(int, *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		return func(call int, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
			if call == n {
				return nil, boom
			}
			return acceptAll(in), nil
		}
	}

	t.Run("first call: plain error", func(t *testing.T) {
		tr := sqstransport.New(&fakeSQS{send: failOn(0)}, "https://sqs.test/1/q", sqstransport.Options{})
		err := tr.Send(t.Context(), messages("q", 25, 0, 0))
		var sendErr *engine.SendError
		if !errors.Is(err, boom) || errors.As(err, &sendErr) {
			t.Errorf("err = %v, want the call's error", err)
		}
	})
	t.Run("later call: the rest fail", func(t *testing.T) {
		fake := &fakeSQS{send: failOn(1)}
		tr := sqstransport.New(fake, "https://sqs.test/1/q", sqstransport.Options{})
		err := tr.Send(t.Context(), messages("q", 25, 0, 0))
		var sendErr *engine.SendError
		if !errors.As(err, &sendErr) {
			t.Fatalf("err = %v, want *engine.SendError", err)
		}
		if got := slices.Sorted(maps.Keys(sendErr.Failed)); !slices.Equal(got, seq(10, 25)) {
			t.Errorf("failed = %v, want 10..24", got)
		}
		if !errors.Is(sendErr.Failed[24], boom) {
			t.Errorf("failed[24] = %v, want the call's error", sendErr.Failed[24])
		}
		if len(fake.calls) != 2 {
			t.Errorf("%d calls, want 2 (stop at the failed call)", len(fake.calls))
		}
	})
}

func TestQueueMissingErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"typed", &types.QueueDoesNotExist{Message: aws.String("gone")}},
		{"query-compatible code", &smithy.GenericAPIError{Code: "AWS.SimpleQueueService.NonExistentQueue"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeSQS{send: func(int, *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
				return nil, fmt.Errorf("operation error: %w", tt.err)
			}}
			err := sqstransport.New(fake, "https://sqs.test/1/gone", sqstransport.Options{}).Send(t.Context(), messages("q", 1, 0, 0))
			if !errors.Is(err, sqstransport.ErrQueueMissing) || !strings.Contains(err.Error(), "https://sqs.test/1/gone") {
				t.Errorf("err = %v, want ErrQueueMissing naming the URL", err)
			}
		})
	}
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

func TestEnvelopeOf(t *testing.T) {
	env := envelope("q", "j-1", `{"a":1}`)
	body, _ := json.Marshal(env)
	got, err := sqstransport.EnvelopeOf(events.SQSMessage{MessageId: "m", Body: string(body)})
	if err != nil {
		t.Fatal(err)
	}
	if got.Ref() != env.Ref() || !got.SlotAt.Equal(env.SlotAt) || string(got.Payload) != `{"a":1}` {
		t.Errorf("EnvelopeOf = %+v, want %+v", got, env)
	}
	if _, err := sqstransport.EnvelopeOf(events.SQSMessage{MessageId: "m-bad", Body: `{"v":99}`}); err == nil || !strings.Contains(err.Error(), "m-bad") {
		t.Errorf("bad body: err = %v, want an error naming the message", err)
	}
}
