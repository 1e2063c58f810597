package target

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/slotq/slotq/pkg/job"
)

// HTTP posts a job's payload to its target URL with Content-Type
// application/json and the headers Slotq-Queue, Slotq-Job-Id, Slotq-Ticket
// and Slotq-Attempt. A 2xx answer is success; a 4xx other than 408 and 429
// fails the job without retry (the request itself is wrong); anything else
// is retried.
type HTTP struct {
	// Client sends the requests. Default http.DefaultClient; the queue's
	// target_timeout bounds each request through its context.
	Client *http.Client
}

// Post sends one attempt of j.
func (h *HTTP) Post(ctx context.Context, j *job.Job) error {
	body := j.Payload
	if len(body) == 0 {
		body = []byte("null")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.Target, bytes.NewReader(body))
	if err != nil {
		return SkipRetry(fmt.Errorf("http target: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Slotq-Queue", j.Queue)
	req.Header.Set("Slotq-Job-Id", j.ID)
	req.Header.Set("Slotq-Ticket", strconv.FormatInt(j.Ticket, 10))
	req.Header.Set("Slotq-Attempt", strconv.Itoa(j.Attempt))
	c := h.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("http target: %w", err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return nil
	case code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests:
		return SkipRetry(fmt.Errorf("http target: %s: %s", resp.Status, bytes.TrimSpace(snippet)))
	default:
		return fmt.Errorf("http target: %s: %s", resp.Status, bytes.TrimSpace(snippet))
	}
}
