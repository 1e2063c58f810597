package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/cli/console"
)

// The console served beside the local stack cuts off a client that sends
// its request a byte at a time, as `slotq console` does: a body trickled
// a byte every 2s, a header trickled so, and a kept-alive connection left
// idle are each closed by the server's timeouts. The test waits for the
// close (a deadline bounds it), not for a time.
func TestLocalConsoleCutsSlowClients(t *testing.T) {
	defer func(t console.Timeouts) { consoleTimeouts = t }(consoleTimeouts)
	consoleTimeouts = console.Timeouts{Read: 500 * time.Millisecond, Idle: 500 * time.Millisecond}
	ready := make(chan Endpoints, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Addr: "127.0.0.1:0", Console: "127.0.0.1:0", Out: io.Discard,
			Logger: slog.New(slog.DiscardHandler), Ready: func(e Endpoints) { ready <- e }})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	var ends Endpoints
	select {
	case ends = <-ready:
	case err := <-done:
		done <- nil
		t.Fatalf("Run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the local runtime did not start in 30s")
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(ends.ConsoleURL, "http://"), "/")

	for name, start := range map[string]string{
		"body":   "POST /queues/emails/follow HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n",
		"header": "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ",
	} {
		t.Run(name, func(t *testing.T) {
			conn := dial(t, addr)
			fmt.Fprint(conn, start)
			// A byte every 2s: each wait for the server's hang-up is the
			// pause between two bytes.
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
				if _, err := conn.Write([]byte("a")); err != nil {
					return // cut off
				}
				if closed(t, conn, 2*time.Second) {
					return
				}
			}
			t.Error("a request sent a byte every 2s held its connection for 30s")
		})
	}
	t.Run("idle", func(t *testing.T) {
		conn := dial(t, addr)
		fmt.Fprint(conn, "GET /static/none HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		if !closed(t, conn, 30*time.Second) {
			t.Error("a kept-alive connection left idle was held for 30s")
		}
	})
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// closed reads conn for up to d and reports whether the server hung up
// (end of stream or reset). An answer (408, 400) is read past.
func closed(t *testing.T, conn net.Conn, d time.Duration) bool {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(d))
	b := make([]byte, 4096)
	for {
		_, err := conn.Read(b)
		var ne net.Error
		switch {
		case err == nil:
			continue
		case errors.As(err, &ne) && ne.Timeout():
			return false
		default:
			return true
		}
	}
}
