package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slotq/slotq/internal/cli/clikit"
)

// TestInvokeExitCodes: slotq invoke exits 0 on an answer, and 1 on a
// refusal ({"error": …}) as on a function error, so that a script sees a
// call that did nothing fail.
func TestInvokeExitCodes(t *testing.T) {
	for _, c := range []struct {
		name, answer, fnError string
		want                  int
	}{
		{name: "answer", answer: `{"queue":"emails","jobs":[]}`, want: clikit.ExitOK},
		{name: "refusal", answer: `{"error":{"code":"unused_field","field":"since","message":"…"}}`, want: clikit.ExitFail},
		{name: "function error", answer: `{"errorMessage":"boom"}`, fnError: "Unhandled", want: clikit.ExitFail},
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

// TestLocalAddressInUse: slotq local on an address another program holds
// says what to do (another slotq local? --addr, --console), for the
// Invoke API's address and the console's; a console address off loopback
// points to slotq console --allow-remote.
func TestLocalAddressInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"invoke api", []string{"local", "--addr", held.Addr().String(), "--console", ""}, []string{"address already in use", "another slotq local", "--addr (now " + held.Addr().String() + ")"}},
		{"console", []string{"local", "--addr", "127.0.0.1:0", "--console", held.Addr().String()}, []string{"address already in use", "another slotq local", "--console (now " + held.Addr().String()}},
		{"remote console", []string{"local", "--addr", "127.0.0.1:0", "--console", "0.0.0.0:0"}, []string{"loopback", "slotq console --allow-remote"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := run(context.Background(), c.args, &stdout, &stderr); got != clikit.ExitFail {
				t.Errorf("exit %d, want %d", got, clikit.ExitFail)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if strings.Contains(stderr.String(), "local: local:") || strings.Contains(stderr.String(), "console: console:") {
				t.Errorf("stderr repeats its prefix:\n%s", stderr.String())
			}
		})
	}
}
