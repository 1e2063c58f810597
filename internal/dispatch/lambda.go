package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"go.opentelemetry.io/otel/propagation"

	"github.com/slotq/slotq/internal/attempt"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/pkg/target"
)

// LambdaAPI is the one Lambda call the Lambda target makes.
type LambdaAPI interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

var _ LambdaAPI = (*lambda.Client)(nil)

// Lambda invokes another function synchronously with the job's event:
// {"queue","job_id","ticket","attempt","slot_at","payload"}, and, when
// the attempt has a trace context, "traceparent" and "tracestate" (W3C
// Trace Context, as an HTTP target's headers carry them). Its response
// payload is the attempt's result (job.Job.Result). A function
// error (FunctionError set) fails the attempt with the function's error
// message, and is retried like any failure; one of errorType
// RetryAfterError (LambdaRetryAfter) is a "slow down" instead.
type Lambda struct {
	API LambdaAPI
}

// LambdaEvent is what a Lambda target receives.
type LambdaEvent struct {
	Queue   string          `json:"queue"`
	JobID   string          `json:"job_id"`
	Ticket  int64           `json:"ticket"`
	Attempt int             `json:"attempt"`
	SlotAt  string          `json:"slot_at"`
	Payload json.RawMessage `json:"payload,omitempty"`
	// TraceParent and TraceState are the attempt's W3C trace context
	// (the target's call span, or the job's own when slotq does not
	// trace); empty when it has none. A function joins the trace by
	// extracting them with a TraceContext propagator.
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`
}

// FunctionName returns the function a target names: "lambda:NAME" gives
// NAME, an ARN is used as it is.
func FunctionName(target string) string {
	if name, ok := strings.CutPrefix(target, "lambda:"); ok {
		return name
	}
	return target
}

// Invoke runs one attempt of j.
func (l *Lambda) Invoke(ctx context.Context, j *job.Job) error {
	ev, err := json.Marshal(lambdaEvent(ctx, j))
	if err != nil {
		return target.SkipRetry(fmt.Errorf("lambda target: %w", err))
	}
	out, err := l.invoke(ctx, j.Target, ev)
	if err != nil {
		return err
	}
	if len(out.Payload) > 0 {
		_ = attempt.SetResult(ctx, lambdaResult(out.Payload))
	}
	return nil
}

// lambdaEvent is j's event in an attempt whose context is ctx.
func lambdaEvent(ctx context.Context, j *job.Job) LambdaEvent {
	tc := propagation.MapCarrier{}
	w3c.Inject(ctx, tc)
	return LambdaEvent{
		Queue: j.Queue, JobID: j.ID, Ticket: j.Ticket, Attempt: j.Attempt,
		SlotAt: j.SlotAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"), Payload: j.Payload,
		TraceParent: tc["traceparent"], TraceState: tc["tracestate"],
	}
}

// invoke calls the function target names with the event ev and waits
// for its answer. A failed call is retried; a function error fails the
// attempt with the function's error message, or slows it down
// (lambdaSlowDown).
func (l *Lambda) invoke(ctx context.Context, tgt string, ev []byte) (*lambda.InvokeOutput, error) {
	fn := FunctionName(tgt)
	out, err := l.API.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(fn),
		InvocationType: types.InvocationTypeRequestResponse,
		Payload:        ev,
	})
	if err != nil {
		return nil, fmt.Errorf("lambda target %s: %w", fn, err)
	}
	if out.FunctionError != nil {
		var fe struct {
			ErrorMessage string `json:"errorMessage"`
			ErrorType    string `json:"errorType"`
		}
		_ = json.Unmarshal(out.Payload, &fe)
		if ra := lambdaSlowDown(fn, fe.ErrorType, fe.ErrorMessage); ra != nil {
			return nil, ra // slowdown.go
		}
		return nil, fmt.Errorf("lambda target %s: %s: %s %s", fn, *out.FunctionError, fe.ErrorType, fe.ErrorMessage)
	}
	return out, nil
}

// lambdaResult is a function's response as a job's result: JSON as it
// is, anything else as a JSON string (over job.MaxResult, the record
// keeps only its size).
func lambdaResult(payload []byte) json.RawMessage {
	res := json.RawMessage(payload)
	if !json.Valid(res) {
		res, _ = json.Marshal(strings.ToValidUTF8(string(payload), "\uFFFD"))
	}
	return res
}
