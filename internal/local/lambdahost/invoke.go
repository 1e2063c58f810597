package lambdahost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Invoker runs an invocation of the function called name: a Host (built
// bootstraps) or Handlers (Go handlers in this process).
type Invoker interface {
	// Invoke invokes synchronously. A function error is a Result with
	// FunctionError set; errors are for a function that does not exist
	// (ErrFunctionNotFound) or an invocation that could not run.
	Invoke(ctx context.Context, name string, payload []byte) (Result, error)
}

// InvokeAPI serves the Lambda Invoke API (POST
// /2015-03-31/functions/{name}/invocations) in front of inv, as Lambda
// answers it: the function's response with X-Amz-Function-Error on a
// function error, ResourceNotFoundException for an unknown name,
// InvalidRequestContentException for a payload that is not JSON, the
// Event (202) and DryRun (204) invocation types. arn names a function in
// error messages. The AWS CLI (v1 and v2) and the SDKs call it with the
// endpoint URL set to the server's.
func InvokeAPI(inv Invoker, arn func(name string) string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /2015-03-31/functions/{name}/invocations", func(w http.ResponseWriter, req *http.Request) {
		serveInvoke(inv, arn, w, req)
	})
	return mux
}

func serveInvoke(inv Invoker, arn func(string) string, w http.ResponseWriter, req *http.Request) {
	name := req.PathValue("name")
	payload, err := io.ReadAll(io.LimitReader(req.Body, 6*1024*1024+1))
	if err != nil {
		apiError(w, http.StatusBadRequest, "InvalidRequestContentException", err.Error())
		return
	}
	if len(payload) > 6*1024*1024 {
		apiError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException", "Request must be smaller than 6291456 bytes for the InvokeFunction operation")
		return
	}
	if len(payload) == 0 {
		payload = []byte("{}")
	}
	if !json.Valid(payload) {
		// As Lambda does: the function never sees a payload that is not JSON.
		apiError(w, http.StatusBadRequest, "InvalidRequestContentException", "Could not parse request body into json")
		return
	}
	notFound := func() {
		apiError(w, http.StatusNotFound, "ResourceNotFoundException", fmt.Sprintf("Function not found: %s", arn(name)))
	}
	switch req.Header.Get("X-Amz-Invocation-Type") {
	case "DryRun":
		if _, err := inv.Invoke(dryRun(req.Context()), name, nil); errors.Is(err, ErrFunctionNotFound) {
			notFound()
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	case "Event":
		if _, err := inv.Invoke(dryRun(req.Context()), name, nil); errors.Is(err, ErrFunctionNotFound) {
			notFound()
			return
		}
		go func() { _, _ = inv.Invoke(context.Background(), name, payload) }()
		w.WriteHeader(http.StatusAccepted)
		return
	}
	res, err := inv.Invoke(req.Context(), name, payload)
	switch {
	case errors.Is(err, ErrFunctionNotFound):
		notFound()
		return
	case err != nil:
		apiError(w, http.StatusInternalServerError, "ServiceException", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	w.Header().Set("X-Amzn-Requestid", res.RequestID)
	if res.FunctionError != "" {
		w.Header().Set("X-Amz-Function-Error", res.FunctionError)
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(res.Payload)
}

type dryRunKey struct{}

// dryRun marks a context whose Invoke only checks that the function
// exists.
func dryRun(ctx context.Context) context.Context { return context.WithValue(ctx, dryRunKey{}, true) }

func isDryRun(ctx context.Context) bool { v, _ := ctx.Value(dryRunKey{}).(bool); return v }

// Handler is one Go function Handlers runs.
type Handler struct {
	// Name is the name callers invoke it by (a template logical id).
	Name string
	// Handler is any function lambda.Start accepts, such as
	// (*enqueue.Handler).Handle; it is wrapped with lambda.NewHandler,
	// so events are decoded and answers encoded exactly as on Lambda.
	Handler any
	// Timeout is the invocation's deadline, as the function's Timeout.
	// Default 3s.
	Timeout time.Duration
}

// Handlers runs Go handlers in this process, as Lambda would run them in
// their bootstraps: each invocation gets a context with the deadline and
// the lambdacontext (request id, function ARN), and concurrent
// invocations run at once, as Lambda scales out. A handler that panics or
// returns an error answers a function error.
type Handlers struct {
	fns    map[string]Handler
	arn    func(string) string
	logger *slog.Logger
}

var _ Invoker = (*Handlers)(nil)

// NewHandlers returns an Invoker over hs. arn gives a function's ARN;
// log hears of panics (default: discard).
func NewHandlers(arn func(name string) string, log *slog.Logger, hs ...Handler) *Handlers {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Handlers{fns: map[string]Handler{}, arn: arn, logger: log}
	for _, h := range hs {
		if h.Timeout <= 0 {
			h.Timeout = 3 * time.Second
		}
		m.fns[h.Name] = h
	}
	return m
}

// Invoke runs the handler of name with payload.
func (m *Handlers) Invoke(ctx context.Context, name string, payload []byte) (res Result, err error) {
	h, ok := m.fns[nameOf(name)]
	if !ok {
		return Result{}, fmt.Errorf("%w: %s", ErrFunctionNotFound, name)
	}
	if isDryRun(ctx) {
		return Result{}, nil
	}
	res.RequestID = newRequestID()
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: res.RequestID, InvokedFunctionArn: m.arn(h.Name)})
	defer func() {
		if p := recover(); p != nil {
			m.logger.ErrorContext(ctx, "function panicked", "function", name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			res.Payload, res.FunctionError, err = functionError("Runtime.Panic", fmt.Sprint(p)), "Unhandled", nil
		}
	}()
	out, herr := lambda.NewHandler(h.Handler).Invoke(ctx, payload)
	if herr != nil {
		typ := fmt.Sprintf("%T", herr)
		if errors.Is(herr, context.DeadlineExceeded) && ctx.Err() != nil {
			typ = "Sandbox.Timedout"
		}
		res.Payload, res.FunctionError = functionError(typ, herr.Error()), "Unhandled"
		return res, nil
	}
	res.Payload = out
	return res, nil
}
