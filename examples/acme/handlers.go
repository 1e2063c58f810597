package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// The job kinds this worker runs. Producers name them in enqueue
// requests: {"queue":"partner","job":{"kind":"partner.notify","payload":{…}}}.
const (
	// KindNotify posts the job's payload to the partner's API.
	KindNotify = "partner.notify"
	// KindReport builds a report from a warehouse that is not ready on the
	// first try: its first attempt fails, and slotq retries it.
	KindReport = "report.build"
)

// Handlers returns the worker's Go handlers by kind. partnerURL is the
// partner API's endpoint (ACME_PARTNER_URL on the stack).
func Handlers(partnerURL string, client *http.Client) *target.Mux {
	if client == nil {
		client = http.DefaultClient
	}
	mux := target.NewMux()
	mux.HandleFunc(KindNotify, func(ctx context.Context, j *api.Job) error {
		return notify(ctx, client, partnerURL, j)
	})
	mux.HandleFunc(KindReport, buildReport)
	return mux
}

// notify posts j's payload to the partner API. The context carries the
// queue's target_timeout. A 4xx answer will not get better by retrying:
// the job fails now (target.SkipRetry). Other failures retry with
// backoff, each retry a new ticket that keeps the queue's rate.
func notify(ctx context.Context, client *http.Client, url string, j *api.Job) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(j.Payload))
	if err != nil {
		return target.SkipRetry(fmt.Errorf("partner request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	// The partner drops repeated deliveries by this key: slotq runs a job
	// at least once, so a crashed attempt may run again.
	req.Header.Set("Idempotency-Key", fmt.Sprintf("%s/%s", j.Queue, j.ID))
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("partner: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests:
		return target.SkipRetry(fmt.Errorf("partner answered %s", resp.Status))
	}
	return fmt.Errorf("partner answered %s", resp.Status)
}

// errNotReady is the first attempt's error of a report job.
var errNotReady = errors.New("warehouse snapshot not ready yet")

// buildReport fails its first attempt, as a job whose dependency is
// briefly unavailable does; the retry (attempt 2, after the queue's
// backoff) succeeds. j.Attempt counts from 1.
func buildReport(ctx context.Context, j *api.Job) error {
	if j.Attempt < 2 {
		return errNotReady
	}
	return ctx.Err()
}
