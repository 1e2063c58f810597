package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestInvokeExitCodes: slotq invoke exits 0 on an answer, and 1 on a
// refusal ({"error": …}) as on a function error, so that a script sees a
// call that did nothing fail.
func TestInvokeExitCodes(t *testing.T) {
	for _, c := range []struct {
		name, answer, fnError string
		want                  int
	}{
		{name: "answer", answer: `{"queue":"emails","jobs":[]}`, want: exitOK},
		{name: "refusal", answer: `{"error":{"code":"unused_field","field":"since","message":"…"}}`, want: exitFail},
		{name: "function error", answer: `{"errorMessage":"boom"}`, fnError: "Unhandled", want: exitFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if c.fnError != "" {
					w.Header().Set("X-Amz-Function-Error", c.fnError)
				}
				_, _ = w.Write([]byte(c.answer))
			}))
			defer srv.Close()
			var stdout, stderr bytes.Buffer
			got := run(context.Background(), []string{"invoke", "--endpoint-url", srv.URL, "AdminFunction", `{"op":"list"}`}, &stdout, &stderr)
			if got != c.want {
				t.Errorf("exit %d, want %d; stderr %s", got, c.want, stderr.String())
			}
			if !strings.Contains(stdout.String(), c.answer) {
				t.Errorf("stdout %q lacks the answer", stdout.String())
			}
		})
	}
}
