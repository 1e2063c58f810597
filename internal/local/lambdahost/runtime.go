package lambdahost

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

const runtimePrefix = "/2018-06-01/runtime"

// runtime serves the Runtime API of one function and runs its bootstrap.
type runtime struct {
	fn   Function
	host *Host
	ln   net.Listener
	srv  *http.Server
	out  io.Writer

	turn sync.Mutex // one invocation at a time, like one execution environment
	next chan *invocation

	mu      sync.Mutex
	proc    *process
	pending map[string]*invocation
	peakRSS int64 // bytes, the most any of its processes used
}

// invocation is one event on its way through the Runtime API.
type invocation struct {
	id       string
	arn      string
	payload  []byte
	deadline time.Time
	done     chan Result // buffered; the first answer wins
}

func (inv *invocation) answer(res Result) {
	res.RequestID = inv.id
	select {
	case inv.done <- res:
	default:
	}
}

func newRuntime(f Function, h *Host) (*runtime, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("lambdahost: runtime API for %s: %w", f.Name, err)
	}
	r := &runtime{
		fn: f, host: h, ln: ln, out: h.opts.Output,
		next: make(chan *invocation), pending: map[string]*invocation{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+runtimePrefix+"/invocation/next", r.serveNext)
	mux.HandleFunc("POST "+runtimePrefix+"/invocation/{id}/response", r.serveResponse)
	mux.HandleFunc("POST "+runtimePrefix+"/invocation/{id}/error", r.serveError)
	mux.HandleFunc("POST "+runtimePrefix+"/init/error", r.serveInitError)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// ensure returns the running process, starting one if there is none.
func (r *runtime) ensure() (*process, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.host.closing.Load() {
		return nil, fmt.Errorf("lambdahost: host closed")
	}
	if r.proc != nil {
		select {
		case <-r.proc.done:
		default:
			return r.proc, nil
		}
	}
	cmd := exec.Command(r.fn.Path)
	cmd.Dir = filepath.Dir(r.fn.Path)
	cmd.Env = r.host.env(r.fn, r.ln.Addr().String())
	cmd.Env = append(cmd.Env, "LAMBDA_TASK_ROOT="+cmd.Dir)
	cmd.Stdout, cmd.Stderr = r.out, r.out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", r.fn.Path, err)
	}
	p := &process{done: make(chan struct{}), pid: cmd.Process.Pid}
	p.kill = func() {
		r.sample(p) // its high-water mark, while it still has one
		_ = cmd.Process.Kill()
	}
	go func() {
		err := cmd.Wait()
		r.mu.Lock()
		p.err = err
		r.mu.Unlock()
		close(p.done)
	}()
	r.proc = p
	return p, nil
}

// sample keeps p's peak resident memory so far. The peak is read from the
// live process, after each invocation and before a kill: a process that
// dies by itself takes the peak of its last invocation with it.
func (r *runtime) sample(p *process) {
	n := peakRSS(p.pid)
	r.mu.Lock()
	r.peakRSS = max(r.peakRSS, n)
	r.mu.Unlock()
}

// invoke runs one invocation to its end.
func (r *runtime) invoke(ctx context.Context, payload []byte) (Result, error) {
	r.turn.Lock()
	defer r.turn.Unlock()
	select {
	case <-r.host.closed:
		return Result{}, fmt.Errorf("lambdahost: host closed")
	default:
	}
	p, err := r.ensure()
	if err != nil {
		return Result{}, err
	}
	inv := &invocation{
		id: newRequestID(), arn: r.host.ARN(r.fn.Name), payload: payload,
		deadline: time.Now().Add(r.fn.Timeout), done: make(chan Result, 1),
	}
	r.mu.Lock()
	r.pending[inv.id] = inv
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.pending, inv.id)
		r.mu.Unlock()
	}()
	timer := time.NewTimer(time.Until(inv.deadline))
	defer timer.Stop()

	handedOver := false
	for {
		var next chan *invocation
		if !handedOver {
			next = r.next
		}
		select {
		case next <- inv:
			handedOver = true
		case res := <-inv.done:
			r.sample(p)
			return res, nil
		case <-p.done:
			select {
			case res := <-inv.done: // answered just before it exited
				return res, nil
			default:
			}
			return r.exited(inv, p), nil
		case <-timer.C:
			p.kill()
			<-p.done
			msg := fmt.Sprintf("%s Task timed out after %.2f seconds", time.Now().UTC().Format(time.RFC3339), r.fn.Timeout.Seconds())
			return Result{Payload: functionError("Sandbox.Timedout", msg), FunctionError: "Unhandled", RequestID: inv.id}, nil
		case <-ctx.Done():
			// The caller went away; this environment is torn down so
			// the next invocation starts clean.
			p.kill()
			<-p.done
			return Result{}, ctx.Err()
		case <-r.host.closed:
			return Result{}, fmt.Errorf("lambdahost: host closed")
		}
	}
}

// exited answers an invocation whose process ended before answering.
func (r *runtime) exited(inv *invocation, p *process) Result {
	r.mu.Lock()
	initErr, exitErr := p.initErr, p.err
	r.mu.Unlock()
	if initErr != nil {
		return Result{Payload: initErr, FunctionError: "Unhandled", RequestID: inv.id}
	}
	msg := "Runtime exited without providing a reason"
	if exitErr != nil {
		msg = fmt.Sprintf("RequestId: %s Error: Runtime exited with error: %v", inv.id, exitErr)
	}
	return Result{Payload: functionError("Runtime.ExitError", msg), FunctionError: "Unhandled", RequestID: inv.id}
}

func (r *runtime) serveNext(w http.ResponseWriter, req *http.Request) {
	select {
	case inv := <-r.next:
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", inv.arn)
		h.Set("Lambda-Runtime-Trace-Id", "Root=1-"+inv.id[:8]+"-"+inv.id[9:13]+";Sampled=0")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(inv.payload)
	case <-req.Context().Done():
	case <-r.host.closed:
		http.Error(w, "host closed", http.StatusGone)
	}
}

func (r *runtime) pendingInvocation(w http.ResponseWriter, req *http.Request) (*invocation, []byte, bool) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 6*1024*1024+1))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, nil, false
	}
	r.mu.Lock()
	inv := r.pending[req.PathValue("id")]
	r.mu.Unlock()
	if inv == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(functionError("InvalidRequestID", "unknown or finished request id "+req.PathValue("id")))
		return nil, nil, false
	}
	return inv, body, true
}

func (r *runtime) serveResponse(w http.ResponseWriter, req *http.Request) {
	inv, body, ok := r.pendingInvocation(w, req)
	if !ok {
		return
	}
	if len(body) > 6*1024*1024 {
		inv.answer(Result{Payload: functionError("Function.ResponseSizeTooLarge", "Response payload size exceeded maximum allowed payload size (6291556 bytes)."), FunctionError: "Unhandled"})
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		return
	}
	// An error while the runtime streamed the body arrives in trailers.
	if typ := req.Trailer.Get("Lambda-Runtime-Function-Error-Type"); typ != "" {
		inv.answer(Result{Payload: functionError(typ, "response failed"), FunctionError: "Unhandled"})
	} else {
		inv.answer(Result{Payload: body})
	}
	w.WriteHeader(http.StatusAccepted)
}

func (r *runtime) serveError(w http.ResponseWriter, req *http.Request) {
	inv, body, ok := r.pendingInvocation(w, req)
	if !ok {
		return
	}
	if len(body) == 0 {
		body = functionError(req.Header.Get("Lambda-Runtime-Function-Error-Type"), "")
	}
	inv.answer(Result{Payload: body, FunctionError: "Unhandled"})
	w.WriteHeader(http.StatusAccepted)
}

func (r *runtime) serveInitError(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1024*1024))
	if len(body) == 0 {
		body = functionError(req.Header.Get("Lambda-Runtime-Function-Error-Type"), "init failed")
	}
	r.mu.Lock()
	if r.proc != nil {
		r.proc.initErr = body
		kill := r.proc.kill
		defer kill() // Lambda ends an environment whose init failed
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

// stop kills the running process, if any, and waits for it.
func (r *runtime) stop() {
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	if p != nil {
		p.kill()
		<-p.done
	}
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// lockedWriter lets several processes share one output.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
