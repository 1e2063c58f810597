package esm

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/slotq/slotq/internal/local/lambdahost"
)

// Function returns the Invoker that invokes the function called name
// through inv, as Lambda's event source does: the batch as JSON, the
// answer decoded as a partial batch response; a function error fails the
// batch.
func Function(inv lambdahost.Invoker, name string) Invoker {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		payload, err := json.Marshal(ev)
		if err != nil {
			return resp, err
		}
		res, err := inv.Invoke(ctx, name, payload)
		if err != nil {
			return resp, err
		}
		if res.FunctionError != "" {
			return resp, fmt.Errorf("%s: %s", res.FunctionError, res.Payload)
		}
		if err := json.Unmarshal(res.Payload, &resp); err != nil {
			return resp, fmt.Errorf("%s answered %q: %w", name, res.Payload, err)
		}
		return resp, nil
	}
}

// Target returns a Schedule's Invoke for the function called name.
func Target(inv lambdahost.Invoker, name string) func(context.Context, []byte) error {
	return func(ctx context.Context, input []byte) error {
		res, err := inv.Invoke(ctx, name, input)
		if err != nil {
			return err
		}
		if res.FunctionError != "" {
			return fmt.Errorf("%s: %s", res.FunctionError, res.Payload)
		}
		return nil
	}
}
