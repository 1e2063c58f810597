package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/propagation"

	"github.com/slotq/slotq/internal/attempt"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/target"
)

// HTTP posts a job's payload to its target URL with Content-Type
// application/json and the headers Slotq-Queue, Slotq-Job-Id, Slotq-Ticket
// and Slotq-Attempt. The response's status and body (up to MaxBody) are
// the attempt's result (HTTPResult). A 2xx answer is success; a 429, and
// a 503 that says when to come back (Retry-After), is a "slow down"
// (attempt.RetryAfterError, its wait from the Retry-After header:
// RetryAfterHeader; none or a malformed one takes the queue's
// retry_after_default), not a failed attempt; a 3xx (redirects are not
// followed) and a 4xx other than 408 fail the job without retry (the
// request itself is wrong); anything else is retried.
//
// Its default client connects only to addresses the job's queue allows
// (slot.Config.CheckAddr): the check runs on every connection, on the
// address DNS resolved to, so a name that resolves (or rebinds) to a
// loopback, private, link-local or metadata address is refused unless the
// queue's allow_networks lists it. It uses no proxy.
type HTTP struct {
	// Client sends the requests. Default: the guarded client described
	// above, one per distinct allow_networks. A Client given here is used
	// as it is, so its transport must make its own address checks.
	Client *http.Client

	mu      sync.Mutex
	clients map[string]*http.Client
}

// Post sends one attempt of j for a queue configured by cfg.
func (h *HTTP) Post(ctx context.Context, j *job.Job, cfg slot.Config) error {
	body := j.Payload
	if len(body) == 0 {
		body = []byte("null")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.Target, bytes.NewReader(body))
	if err != nil {
		return target.SkipRetry(fmt.Errorf("http target: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Slotq-Queue", j.Queue)
	req.Header.Set("Slotq-Job-Id", j.ID)
	req.Header.Set("Slotq-Ticket", strconv.FormatInt(j.Ticket, 10))
	req.Header.Set("Slotq-Attempt", strconv.Itoa(j.Attempt))
	// The attempt's trace context (the target's call span, or the job's
	// own when slotq does not trace): traceparent and tracestate.
	w3c.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, got, err := h.send(req, cfg, MaxBody)
	if err != nil {
		return err
	}
	_ = attempt.SetResult(ctx, httpResult(resp, got))
	return answerError(resp, got)
}

// send sends req with the client for cfg and reads the answer's body, up
// to limit+1 bytes. A connection the guarded client refused fails
// without retry; any other error of the request is retried.
func (h *HTTP) send(req *http.Request, cfg slot.Config, limit int64) (*http.Response, []byte, error) {
	c := h.Client
	if c == nil {
		c = h.guarded(cfg)
	}
	resp, err := c.Do(req)
	if err != nil {
		var refused *addrError
		if errors.As(err, &refused) {
			return nil, nil, target.SkipRetry(fmt.Errorf("http target: %w", refused))
		}
		return nil, nil, fmt.Errorf("http target: %w", err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	return resp, got, nil
}

// answerError is the attempt's error for an answer's status (nil for a
// 2xx), with the start of its body.
func answerError(resp *http.Response, body []byte) error {
	snippet := answerStart(body)
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
		return httpSlowDown(resp.Status, resp.Header.Get("Retry-After"), snippet, time.Now()) // slowdown.go
	case code >= 300 && code < 400:
		return target.SkipRetry(fmt.Errorf("http target: %s: redirect to %q not followed", resp.Status, resp.Header.Get("Location")))
	case code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests:
		return target.SkipRetry(fmt.Errorf("http target: %s: %s", resp.Status, bytes.TrimSpace(snippet)))
	default:
		return fmt.Errorf("http target: %s: %s", resp.Status, bytes.TrimSpace(snippet))
	}
}

// maxAnswer bounds the start of a response body a failed or slowed
// attempt's error carries: what a job's history keeps of it
// (job.MaxEventError).
const maxAnswer = job.MaxEventError

// answerStart is the start of body an error carries: up to maxAnswer
// bytes, cut on a rune boundary so the text stays readable.
func answerStart(body []byte) []byte {
	n := len(body)
	if n > maxAnswer {
		n = maxAnswer
		for n > 0 && !utf8.RuneStart(body[n]) {
			n--
		}
	}
	return body[:n]
}

// MaxBody bounds the response body an HTTP target keeps as the job's
// result: 16 KiB, so its result stays within job.MaxResult.
const MaxBody = 16 << 10

// HTTPResult is an HTTP target's result (job.Job.Result): the response's
// status and body, the body as JSON when the response says it is JSON
// (and it parses), otherwise as text. A body over MaxBody bytes is cut
// to its first MaxBody bytes, as text, with Truncated set.
type HTTPResult struct {
	Status      int             `json:"status"`
	ContentType string          `json:"content_type,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
	Truncated   bool            `json:"truncated,omitempty"`
}

// httpResult encodes resp's status and body (read up to MaxBody+1 bytes)
// as an HTTPResult, within job.MaxResult.
func httpResult(resp *http.Response, body []byte) json.RawMessage {
	r := HTTPResult{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type")}
	if len(body) > MaxBody {
		body, r.Truncated = body[:MaxBody], true
	}
	mt, _, _ := mime.ParseMediaType(r.ContentType)
	isJSON := mt == "application/json" || strings.HasSuffix(mt, "+json")
	for {
		switch {
		case len(body) == 0:
			r.Body = nil
		case isJSON && !r.Truncated && json.Valid(body):
			r.Body = body
		default:
			r.Body, _ = json.Marshal(strings.ToValidUTF8(string(body), "\uFFFD"))
		}
		b, _ := json.Marshal(r)
		if len(b) <= job.MaxResult {
			return b
		}
		// Escapes made the text longer than the bound: keep less.
		body, r.Truncated = body[:len(body)/2], true
	}
}

// guarded returns the client for queues with cfg's allow_networks. Each
// set of networks has its own client, so a pooled connection one queue
// was allowed to open is never reused for a queue that is not.
func (h *HTTP) guarded(cfg slot.Config) *http.Client {
	key := strings.Join(cfg.AllowNetworks, ",")
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.clients[key]; ok {
		return c
	}
	if h.clients == nil {
		h.clients = map[string]*http.Client{}
	}
	allow := slot.Config{AllowNetworks: cfg.AllowNetworks}
	d := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		// Control sees the address after DNS resolution, for every
		// connection: the check DNS rebinding cannot get around.
		Control: dialCheck(allow),
	}
	c := &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           d.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	h.clients[key] = c
	return c
}

// dialCheck is the guarded dialer's check of the address it is about to
// connect to: the same rule as the enqueue check (slot.Config.CheckAddr),
// so a target accepted at enqueue is one the worker will dial, and the
// other way round.
func dialCheck(allow slot.Config) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &addrError{fmt.Errorf("address %q: %w", address, err)}
		}
		if err := allow.CheckAddr(ap.Addr()); err != nil {
			return &addrError{err}
		}
		return nil
	}
}

// addrError is a connection the guarded dialer refused.
type addrError struct{ err error }

func (e *addrError) Error() string { return "refused: " + e.err.Error() }
func (e *addrError) Unwrap() error { return e.err }
