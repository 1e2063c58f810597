package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/internal/attempt"
	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/pkg/target"
)

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name, header string
		want         time.Duration
	}{
		{"seconds", "2", 2 * time.Second},
		{"seconds with spaces", " 120 ", 2 * time.Minute},
		{"an HTTP date", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"an RFC 850 date", now.Add(time.Hour).Format("Monday, 02-Jan-06 15:04:05 GMT"), time.Hour},
		{"a past date: the default", now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"none: the default", "", 0},
		{"zero: the default", "0", 0},
		{"negative: the default", "-5", 0},
		{"garbage: the default", "soon", 0},
		{"a fraction: the default", "1.5", 0},
		{"a huge number: a day", "99999999999", 24 * time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := dispatch.RetryAfterHeader(tt.header, now); got != tt.want {
				t.Fatalf("RetryAfterHeader(%q) = %v, want %v", tt.header, got, tt.want)
			}
		})
	}
}

// An HTTP target that answers 429 or 503 slows its queue down: the
// attempt's error is a RetryAfterError with the header's wait and the
// answer, not a failure; other statuses are as before.
func TestHTTPTargetSlowDown(t *testing.T) {
	var status int
	var retryAfter string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte("quota exceeded"))
	}))
	defer srv.Close()
	j := &job.Job{Queue: "q", ID: "j1", Ticket: 1, Attempt: 1, Target: srv.URL}
	for _, tt := range []struct {
		name   string
		status int
		header string
		slow   bool
		wait   time.Duration
	}{
		{"429 with seconds", http.StatusTooManyRequests, "2", true, 2 * time.Second},
		{"503 with seconds", http.StatusServiceUnavailable, "30", true, 30 * time.Second},
		{"429 without the header", http.StatusTooManyRequests, "", true, 0},
		{"500 is a failure", http.StatusInternalServerError, "2", false, 0},
		{"503 without the header is a failure", http.StatusServiceUnavailable, "", false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, retryAfter = tt.status, tt.header
			err := (&dispatch.Dispatcher{}).Run(context.Background(), j, cfg)
			var ra *target.RetryAfterError
			if errors.As(err, &ra) != tt.slow {
				t.Fatalf("Run = %v; want a slow-down: %v", err, tt.slow)
			}
			if !tt.slow {
				return
			}
			if ra.Wait != tt.wait || !strings.Contains(ra.Answer, "quota exceeded") || !strings.Contains(ra.Answer, tt.name[:3]) {
				t.Fatalf("slow-down %+v; want wait %v and the answer", ra, tt.wait)
			}
			if errors.Is(err, attempt.ErrSkipRetry) {
				t.Fatalf("Run = %v: a slow-down must not end the job", err)
			}
		})
	}
}

// A Lambda function that fails with errorType RetryAfterError slows its
// queue down; the wait is read from its errorMessage, as a Go function
// returning target.RetryAfter writes it or as seconds.
func TestLambdaTargetSlowDown(t *testing.T) {
	fake := &fakeLambda{}
	d := &dispatch.Dispatcher{Lambda: &dispatch.Lambda{API: fake}}
	j := &job.Job{Queue: "q", ID: "j1", Ticket: 3, Attempt: 1, Target: "lambda:mailer"}
	goErr := target.RetryAfter(1500 * time.Millisecond)
	for _, tt := range []struct {
		name, errorType, message string
		slow                     bool
		wait                     time.Duration
	}{
		{"a Go function's error", dispatch.LambdaRetryAfter, goErr.Error(), true, 1500 * time.Millisecond},
		{"seconds", dispatch.LambdaRetryAfter, "3", true, 3 * time.Second},
		{"no time: the default", dispatch.LambdaRetryAfter, "busy", true, 0},
		{"another error type", "Error", "retry after 2s", false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			payload, _ := json.Marshal(map[string]string{"errorType": tt.errorType, "errorMessage": tt.message})
			fake.out = &lambda.InvokeOutput{StatusCode: 200, FunctionError: aws.String("Unhandled"), Payload: payload}
			err := d.Run(context.Background(), j, cfg)
			var ra *target.RetryAfterError
			if err == nil || errors.As(err, &ra) != tt.slow {
				t.Fatalf("Run = %v; want a slow-down: %v", err, tt.slow)
			}
			if tt.slow && (ra.Wait != tt.wait || !strings.Contains(ra.Answer, tt.message)) {
				t.Fatalf("slow-down %+v; want wait %v and the function's answer", ra, tt.wait)
			}
		})
	}
}

// What aws-lambda-go reports as errorType for a Go function's error is
// the name of its type: a function that returns target.RetryAfter's
// error unwrapped is read as a slow-down with no code of its own.
func TestRetryAfterErrorTypeName(t *testing.T) {
	if name := errorTypeName(target.RetryAfter(time.Second)); name != dispatch.LambdaRetryAfter {
		t.Fatalf("a RetryAfterError's errorType is %q, want %q", name, dispatch.LambdaRetryAfter)
	}
}

// errorTypeName is aws-lambda-go's getErrorType (lambda/errors.go): the
// name of the error's type, through one pointer.
func errorTypeName(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Ptr {
		return t.Elem().Name()
	}
	return t.Name()
}
