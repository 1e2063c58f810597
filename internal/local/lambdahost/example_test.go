package lambdahost_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/slotq/slotq/internal/local/lambdahost"
)

// Run Go handlers as Lambda would, behind the same Invoker as built
// bootstraps: events decoded and answers encoded by aws-lambda-go, with a
// deadline and a request id. InvokeAPI serves them over HTTP.
func ExampleNewHandlers() {
	type greeting struct {
		Name string `json:"name"`
	}
	arn := func(name string) string { return "arn:aws:lambda:us-east-1:123456789012:function:" + name }
	inv := lambdahost.NewHandlers(arn, slog.New(slog.DiscardHandler), lambdahost.Handler{
		Name: "Greeter",
		Handler: func(ctx context.Context, g greeting) (string, error) {
			if g.Name == "" {
				return "", errors.New("no name")
			}
			return "hello " + g.Name, nil
		},
	})
	for _, payload := range []string{`{"name":"Ada"}`, `{}`} {
		res, err := inv.Invoke(context.Background(), "Greeter", []byte(payload))
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s %q\n", res.Payload, res.FunctionError)
	}
	_, err := inv.Invoke(context.Background(), "Nobody", nil)
	fmt.Println(err)
	// Output:
	// "hello Ada" ""
	// {"errorMessage":"no name","errorType":"*errors.errorString"} "Unhandled"
	// function not found: Nobody
}
