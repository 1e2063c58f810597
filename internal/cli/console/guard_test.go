package console

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Remote access needs the names to serve and a login: without either,
// Run refuses before it listens.
func TestRunRefusesUnguardedRemote(t *testing.T) {
	for _, o := range []Options{
		{AllowRemote: true},
		{AllowRemote: true, Auth: "ops:secret"},
		{AllowRemote: true, AllowHosts: []string{"console.internal"}},
		{AllowRemote: true, AllowHosts: []string{"console.internal"}, Auth: "no-colon"},
	} {
		err := Run(t.Context(), newFake(), "127.0.0.1:0", o, func(string) { t.Errorf("%+v: Run listened", o) })
		if err == nil {
			t.Errorf("Run(%+v) = nil, want a refusal", o)
		}
	}
	err := Run(t.Context(), newFake(), "127.0.0.1:0", Options{AllowRemote: true}, nil)
	if !errors.Is(err, ErrRemoteUnguarded) {
		t.Errorf("Run without hosts or login: %v, want ErrRemoteUnguarded", err)
	}
}

// With a login set, every request needs it: pages, static files, actions.
func TestBasicAuth(t *testing.T) {
	h := New(newFake(), Options{Auth: "ops:s3cret"})
	for _, tc := range []struct {
		path       string
		user, pass string
		want       int
	}{
		{"/", "", "", http.StatusUnauthorized},
		{"/static/console.css", "", "", http.StatusUnauthorized},
		{"/", "ops", "wrong", http.StatusUnauthorized},
		{"/", "other", "s3cret", http.StatusUnauthorized},
		{"/", "ops", "s3cret", http.StatusOK},
		{"/static/console.css", "ops", "s3cret", http.StatusOK},
	} {
		req := httptest.NewRequest("GET", "http://127.0.0.1:3002"+tc.path, nil)
		if tc.user != "" {
			req.SetBasicAuth(tc.user, tc.pass)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("GET %s as %q:%q = %d, want %d", tc.path, tc.user, tc.pass, rec.Code, tc.want)
		}
		if tc.want == http.StatusUnauthorized && !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("GET %s: 401 without a Basic challenge", tc.path)
		}
	}
}

// A name no queue can have is the caller's error (400), not the stack's
// (502), and the console makes no admin call for it.
func TestBadQueueName(t *testing.T) {
	_, _, h := fixture(t)
	for _, path := range []string{"/queues/bad%20name", "/queues/" + strings.Repeat("q", 81), "/queues/a%2Fb/jobs/x", "/queues/%C3%A9/confirm?action=pause"} {
		if code, body := get(t, h, path); code != http.StatusBadRequest || !strings.Contains(body, "not a queue name") {
			t.Errorf("GET %s = %d, want 400 saying it is not a queue name", path, code)
		}
	}
}

// The static files are served, their folder is not listed.
func TestStaticNoListing(t *testing.T) {
	_, _, h := fixture(t)
	for path, want := range map[string]int{"/static/": http.StatusNotFound, "/static/console.css": http.StatusOK} {
		if code, _ := get(t, h, path); code != want {
			t.Errorf("GET %s = %d, want %d", path, code, want)
		}
	}
}

// A destructive action's confirmation does not put the focus on its
// button (Enter on a page just opened must not purge); a harmless one
// does.
func TestConfirmFocus(t *testing.T) {
	_, _, h := fixture(t)
	for action, focus := range map[string]bool{"purge": false, "pause": true} {
		code, body := get(t, h, "/queues/emails/confirm?action="+action)
		if code != http.StatusOK {
			t.Fatalf("confirm %s = %d", action, code)
		}
		button := body[strings.Index(body, `<button type="submit" id="confirm"`):]
		button = button[:strings.Index(button, ">")]
		if got := strings.Contains(button, "autofocus"); got != focus {
			t.Errorf("confirm %s: button %s; autofocus %v, want %v", action, button, got, focus)
		}
	}
}

// A client that sends its request a byte at a time is cut off by the
// read timeout instead of holding a connection for as long as it likes.
func TestSlowRequestCutOff(t *testing.T) {
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(t.Context(), newFake(), "127.0.0.1:0", Options{Timeouts: Timeouts{Read: 300 * time.Millisecond}}, func(u string) { urls <- u })
	}()
	u := <-urls
	conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /queues/emails/follow HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n")
	// Dribble the body; the server must hang up long before it is whole.
	deadline := time.Now().Add(60 * time.Second)
	for sent := 0; sent < 1000; sent++ {
		if time.Now().After(deadline) {
			break
		}
		conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte("a")); err != nil {
			return // cut off
		}
		conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		b := make([]byte, 512)
		if n, err := conn.Read(b); n > 0 || (err != nil && !isTimeout(err)) {
			return // answered (408/400) or closed: cut off
		}
	}
	t.Error("a body sent a byte at a time held the connection for 1000 bytes or a minute")
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
