package lambdahost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Function is one function the host runs.
type Function struct {
	// Name is the name callers invoke it by, such as the template's
	// logical id (EnqueueFunction).
	Name string
	// Aliases are further names it answers to, such as its FunctionName
	// in the template. An ARN whose last part is a name or alias works too.
	Aliases []string
	// Path is the bootstrap executable.
	Path string
	// Env is the function's own environment (the template's
	// Environment.Variables and logging settings). The host adds it, and
	// the variables the Lambda runtime sets, to Options.BaseEnv.
	Env map[string]string
	// Timeout bounds one invocation. Default 3s, as in Lambda.
	Timeout time.Duration
	// MemoryMB is reported in AWS_LAMBDA_FUNCTION_MEMORY_SIZE. Default 128.
	MemoryMB int
	// Concurrency is how many execution environments (bootstrap
	// processes, each with its own Runtime API) the function may have,
	// so that many invocations run at once, as Lambda scales out.
	// Default 1.
	Concurrency int
}

// Options configure a Host.
type Options struct {
	// Addr is where the Invoke API listens. Default 127.0.0.1:0 (a free
	// loopback port).
	Addr string
	// Region and AccountID make up function ARNs. Defaults: AWS_REGION
	// (else us-east-1) and 123456789012.
	Region    string
	AccountID string
	// BaseEnv is the environment every bootstrap starts from, as
	// "KEY=value" entries; AWS credentials and AWS_ENDPOINT_URL* pass
	// through it. Default os.Environ().
	BaseEnv []string
	// Output receives the bootstraps' stdout and stderr (their logs).
	// Default os.Stderr.
	Output io.Writer
}

// Result is the outcome of one invocation, as the Invoke API reports it.
type Result struct {
	// Payload is the function's response, or its error object
	// ({"errorMessage","errorType"}) when FunctionError is set.
	Payload []byte
	// FunctionError is "Unhandled" when the function failed, else "".
	FunctionError string
	// RequestID identifies the invocation.
	RequestID string
}

// ErrFunctionNotFound: no function of that name.
var ErrFunctionNotFound = errors.New("function not found")

// Host runs functions and serves the Invoke API in front of them.
type Host struct {
	opts   Options
	fns    map[string]*pool // by name and alias
	all    []*runtime
	pools  []*pool
	srv    *http.Server
	ln     net.Listener
	closed chan struct{}

	closeOnce sync.Once
	closing   atomic.Bool // set first by Close: no process starts any more
}

// Start starts the runtime APIs of fns and the Invoke API. Bootstrap
// processes start lazily, on a function's first invocation (a cold start).
func Start(fns []Function, opts Options) (*Host, error) {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Region == "" {
		opts.Region = os.Getenv("AWS_REGION")
	}
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	if opts.AccountID == "" {
		opts.AccountID = "123456789012"
	}
	if opts.BaseEnv == nil {
		opts.BaseEnv = os.Environ()
	}
	if opts.Output == nil {
		opts.Output = os.Stderr
	}
	opts.Output = &lockedWriter{w: opts.Output}
	h := &Host{opts: opts, fns: map[string]*pool{}, closed: make(chan struct{})}
	for _, f := range fns {
		if f.Timeout <= 0 {
			f.Timeout = 3 * time.Second
		}
		if f.MemoryMB <= 0 {
			f.MemoryMB = 128
		}
		p := &pool{free: make(chan *runtime, max(f.Concurrency, 1))}
		for range max(f.Concurrency, 1) {
			r, err := newRuntime(f, h)
			if err != nil {
				h.Close()
				return nil, err
			}
			h.all = append(h.all, r)
			p.all = append(p.all, r)
			p.free <- r
		}
		h.pools = append(h.pools, p)
		for _, n := range append([]string{f.Name}, f.Aliases...) {
			if n == "" {
				continue
			}
			if _, dup := h.fns[n]; dup {
				h.Close()
				return nil, fmt.Errorf("lambdahost: function name %q used twice", n)
			}
			h.fns[n] = p
		}
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("lambdahost: listen %s: %w", opts.Addr, err)
	}
	h.ln = ln
	h.srv = &http.Server{Handler: InvokeAPI(h, h.ARN), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

// URL is the Invoke API's base URL, for AWS_ENDPOINT_URL_LAMBDA.
func (h *Host) URL() string { return "http://" + h.ln.Addr().String() }

// Functions lists the functions' names.
func (h *Host) Functions() []string {
	names := make([]string, len(h.pools))
	for i, p := range h.pools {
		names[i] = p.all[0].fn.Name
	}
	return names
}

// ARN returns the ARN the host gives a function name.
func (h *Host) ARN(name string) string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", h.opts.Region, h.opts.AccountID, name)
}

func (h *Host) lookup(name string) (*pool, bool) {
	if r, ok := h.fns[name]; ok {
		return r, true
	}
	r, ok := h.fns[nameOf(name)]
	return r, ok
}

// nameOf returns the function name in an ARN, possibly with a qualifier
// (arn:aws:lambda:region:acct:function:NAME[:QUALIFIER]), or name itself.
func nameOf(name string) string {
	if strings.HasPrefix(name, "arn:") {
		parts := strings.Split(name, ":")
		if len(parts) >= 7 && parts[5] == "function" {
			return parts[6]
		}
	}
	return name
}

// Invoke invokes a function synchronously with payload and waits for its
// answer. A function error is a Result with FunctionError set, not an
// error; errors are for a function that does not exist or a ctx that ended.
func (h *Host) Invoke(ctx context.Context, name string, payload []byte) (Result, error) {
	r, ok := h.lookup(name)
	if !ok {
		return Result{}, fmt.Errorf("%w: %s", ErrFunctionNotFound, name)
	}
	if isDryRun(ctx) {
		return Result{}, nil
	}
	return r.invoke(ctx, payload)
}

// PeakRSS returns the most resident memory any process of the named
// function used, in bytes, as read after each of its invocations and
// before each kill (all of them at Close): what its MemorySize must hold.
// 0 if none has answered, or off Linux, where the host cannot tell.
func (h *Host) PeakRSS(name string) int64 {
	p, ok := h.fns[name]
	if !ok {
		return 0
	}
	var peak int64
	for _, r := range p.all {
		r.mu.Lock()
		peak = max(peak, r.peakRSS)
		r.mu.Unlock()
	}
	return peak
}

// pool is a function's execution environments; an invocation takes a
// free one or waits for one.
type pool struct {
	all  []*runtime
	free chan *runtime
}

func (p *pool) invoke(ctx context.Context, payload []byte) (Result, error) {
	select {
	case r := <-p.free:
		defer func() { p.free <- r }()
		return r.invoke(ctx, payload)
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// Close stops every bootstrap process and the servers. The processes
// are killed first, while their Runtime API still answers, so none of
// them prints a refused connection or a 410 on its way out.
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		h.closing.Store(true)
		for _, r := range h.all {
			r.stop()
		}
		close(h.closed)
		if h.srv != nil {
			_ = h.srv.Close()
		}
		for _, r := range h.all {
			_ = r.srv.Close()
		}
	})
	return nil
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": msg, "__type": typ})
}

// functionError is the error object Lambda returns for a failed invocation.
func functionError(typ, msg string) []byte {
	b, _ := json.Marshal(map[string]string{"errorType": typ, "errorMessage": msg})
	return b
}

// env returns the process environment of a function.
func (h *Host) env(f Function, runtimeAPI string) []string {
	m := map[string]string{}
	for _, kv := range h.opts.BaseEnv {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	maps.Copy(m, map[string]string{
		"AWS_LAMBDA_RUNTIME_API":          runtimeAPI,
		"AWS_LAMBDA_FUNCTION_NAME":        f.Name,
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": fmt.Sprint(f.MemoryMB),
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + f.Name,
		"AWS_LAMBDA_LOG_STREAM_NAME":      "local",
		"AWS_REGION":                      h.opts.Region,
		"AWS_DEFAULT_REGION":              h.opts.Region,
		"AWS_EXECUTION_ENV":               "AWS_Lambda_provided.al2023",
		"_HANDLER":                        "bootstrap",
	})
	maps.Copy(m, f.Env)
	out := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}

// process is one run of a bootstrap.
type process struct {
	done    chan struct{} // closed when it exits
	err     error         // its exit status, set before done closes
	initErr []byte        // set by /init/error
	kill    func()
	pid     int
}
