package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/testenv"
)

// hit is one request an HTTP target received: which job, when.
type hit struct {
	id string
	at time.Time
}

// `slotq local` end to end with a target that slows its queue down: a
// real HTTP server on loopback answers one request 429 with
// Retry-After: 2. No request of the queue reaches it for the 2 s after
// that answer; the answered job is the next request; every job
// succeeds, none with an attempt counted as failed (each at attempt 1).
func TestLocalSlowDown(t *testing.T) {
	var mu sync.Mutex
	var hits []hit
	answered := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Slotq-Job-Id")
		mu.Lock()
		defer mu.Unlock()
		hits = append(hits, hit{id: id, at: time.Now()})
		if id == "j3" && !answered {
			answered = true
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	p := startLocal(t, nil, "--resume-every", "1s")
	cfg := map[string]any{"interval": "200ms", "skew": "10ms", "max_attempts": 3,
		"targets": []string{"http://127.0.0.1:*"}, "allow_networks": []string{"127.0.0.0/8"}}
	invoke(t, p.url, "AdminFunction", map[string]any{"op": "create", "queue": "api", "config": cfg})
	var jobs []map[string]any
	const n = 10
	for i := range n {
		jobs = append(jobs, map[string]any{"id": fmt.Sprintf("j%d", i), "target": srv.URL + "/call"})
	}
	invoke(t, p.url, "EnqueueFunction", map[string]any{"queue": "api", "jobs": jobs})
	testenv.WaitFor(t, "every job succeeds", func() bool {
		for i := range n {
			if jobStatus(t, p.url, "api", fmt.Sprintf("j%d", i)) != "succeeded" {
				return false
			}
		}
		return true
	})

	mu.Lock()
	defer mu.Unlock()
	if len(hits) != n+1 {
		t.Fatalf("%d requests, want %d (one answered 429, then each job once): %v", len(hits), n+1, hits)
	}
	k := -1
	for i, h := range hits {
		if h.id == "j3" {
			k = i
			break
		}
	}
	if k < 0 || k+1 >= len(hits) {
		t.Fatalf("the 429 was not followed by a request: %v", hits)
	}
	next := hits[k+1]
	if next.id != "j3" {
		t.Errorf("the request after the 429 was %s's, want the answered job j3's", next.id)
	}
	if wait := next.at.Sub(hits[k].at); wait < 2*time.Second {
		t.Errorf("the next request came %v after the 429 with Retry-After: 2", wait)
	}
	for i := range n {
		id := fmt.Sprintf("j%d", i)
		j := invoke(t, p.url, "AdminFunction", map[string]any{"op": "get", "queue": "api", "job_id": id})["job"].(map[string]any)
		if j["attempt"] != float64(1) {
			t.Errorf("%s: attempt %v, want 1 (a slow-down is not a failed attempt)", id, j["attempt"])
		}
		if id == "j3" && j["slow_downs"] != float64(1) {
			t.Errorf("j3: slow_downs %v, want 1", j["slow_downs"])
		}
	}
	st := invoke(t, p.url, "AdminFunction", map[string]any{"op": "stats", "queue": "api"})
	if s, _ := st["stats"].(map[string]any); s == nil || s["state"].(map[string]any)["slow_downs"] != float64(1) {
		t.Errorf("stats %v: want the queue's state to count one slow-down", st)
	}
}
