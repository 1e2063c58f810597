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
	tc := propagation.MapCarrier{}
	w3c.Inject(ctx, tc)
	ev, err := json.Marshal(LambdaEvent{
		Queue: j.Queue, JobID: j.ID, Ticket: j.Ticket, Attempt: j.Attempt,
		SlotAt: j.SlotAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"), Payload: j.Payload,
		TraceParent: tc["traceparent"], TraceState: tc["tracestate"],
	})
	if err != nil {
		return target.SkipRetry(fmt.Errorf("lambda target: %w", err))
	}
	out, err := l.API.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(FunctionName(j.Target)),
		InvocationType: types.InvocationTypeRequestResponse,
		Payload:        ev,
	})
	if err != nil {
		return fmt.Errorf("lambda target %s: %w", FunctionName(j.Target), err)
	}
	if out.FunctionError != nil {
		var fe struct {
			ErrorMessage string `json:"errorMessage"`
			ErrorType    string `json:"errorType"`
		}
		_ = json.Unmarshal(out.Payload, &fe)
		if ra := lambdaSlowDown(FunctionName(j.Target), fe.ErrorType, fe.ErrorMessage); ra != nil {
			return ra // slowdown.go
		}
		return fmt.Errorf("lambda target %s: %s: %s %s", FunctionName(j.Target), *out.FunctionError, fe.ErrorType, fe.ErrorMessage)
	}
	if len(out.Payload) > 0 {
		// The function's response is the job's result: JSON as it is,
		// anything else as a JSON string; over job.MaxResult, dropped.
		res := json.RawMessage(out.Payload)
		if !json.Valid(res) {
			res, _ = json.Marshal(strings.ToValidUTF8(string(out.Payload), "\uFFFD"))
		}
		_ = attempt.SetResult(ctx, res)
	}
	return nil
}
