package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Defaults of Options.
const (
	// DefaultRefresh is how often an open page reloads its live part.
	DefaultRefresh = 5 * time.Second
	// DefaultFollow is how many jobs per queue the console follows for
	// the timeline.
	DefaultFollow = 500
	// DefaultAddr is where Run listens when given no address.
	DefaultAddr = "127.0.0.1:3002"
)

// Options configure the console.
type Options struct {
	// Name is shown in every page's header: the stack's name, or
	// "local". Default "slotq".
	Name string
	// Refresh is how often an open page reloads its live part (a queue's
	// figures, its timeline, a waiting job's record), each time one or a
	// few admin invocations (docs/console.md). A page polls only while
	// it is visible. Default DefaultRefresh (5s); at least 1s.
	Refresh time.Duration
	// Follow caps the jobs per queue whose starts the timeline draws
	// (the oldest are dropped). Default DefaultFollow (500).
	Follow int
	// AllowRemote lets Listen bind an address other than loopback.
	// Default false. Whatever it is, only a request whose Host is a
	// loopback address, "localhost" or one of AllowHosts is served, so a
	// web page cannot reach the console by pointing a name of its own at
	// it (DNS rebinding); Run refuses AllowRemote without AllowHosts and
	// without an authentication (Auth, or AuthProxy).
	AllowRemote bool
	// AllowHosts are the host names (without port) the console serves
	// besides loopback ones: the names its users reach it by.
	AllowHosts []string
	// Auth, if set, is the "user:password" every request must present
	// with HTTP basic authentication (compared in constant time). `slotq
	// console` reads it from SLOTQ_CONSOLE_AUTH. Use it over HTTPS (a TLS
	// proxy in front): basic authentication sends the password with
	// every request.
	Auth string
	// AuthProxy says that a proxy in front of the console authenticates
	// its users (an OAuth2 proxy, an identity-aware load balancer), so
	// Run accepts AllowRemote without Auth.
	AuthProxy bool
	// Timeouts are Run's server's (Server). Default DefaultTimeouts.
	Timeouts Timeouts
	// Logger receives the errors of the admin calls. Default: none.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.Name == "" {
		o.Name = "slotq"
	}
	if o.Refresh == 0 {
		o.Refresh = DefaultRefresh
	}
	o.Refresh = max(o.Refresh, time.Second)
	if o.Follow <= 0 {
		o.Follow = DefaultFollow
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// server is the console's handler.
type server struct {
	src   Source
	o     Options
	pages map[string]*template.Template
	// token is this process's secret, in every action form: a page of
	// another site cannot know it, so it cannot post an action.
	token  string
	follow *follow

	mu       sync.Mutex
	activity map[string]activityRead // by queue
	keys     map[string]keysRead     // by queue
}

// keysRead is a keyed queue's busiest keys as last read, and when.
type keysRead struct {
	at   time.Time
	keys []api.KeyInfo
}

// keysEvery is how often the console reads a keyed queue's keys:
// list_keys reads each listed key's meter (up to 1,000 reads), so a page
// refreshing every few seconds reads them at most this often.
const keysEvery = 30 * time.Second

// busiest returns a keyed queue's keys (list_keys), read at most once
// per keysEvery whatever the number of pages and refreshes, and when
// they were read.
func (s *server) busiest(ctx context.Context, queue string) ([]api.KeyInfo, time.Time, error) {
	now := s.o.Now()
	s.mu.Lock()
	last, ok := s.keys[queue]
	s.mu.Unlock()
	if ok && now.Sub(last.at) < keysEvery {
		return last.keys, last.at, nil
	}
	keys, err := s.src.Keys(ctx, queue)
	if err != nil {
		return nil, now, err
	}
	s.mu.Lock()
	s.keys[queue] = keysRead{at: now, keys: keys}
	s.mu.Unlock()
	return keys, now, nil
}

// activityRead is a queue's activity as last read, and when.
type activityRead struct {
	at       time.Time
	activity *api.Activity
	err      string
}

// activityEvery is how often the console reads a queue's activity: its
// metrics move by the minute, while its counters are read at every
// refresh.
const activityEvery = time.Minute

// stats reads a queue's figures, with its activity when the one read
// last is a minute old (or there is none): one metrics read a minute per
// queue, however often its pages refresh.
func (s *server) stats(ctx context.Context, queue string) (QueueStats, error) {
	now := s.o.Now()
	s.mu.Lock()
	last, ok := s.activity[queue]
	s.mu.Unlock()
	fresh := ok && now.Sub(last.at) < activityEvery
	st, err := s.src.Stats(ctx, queue, !fresh)
	if err != nil {
		return st, err
	}
	if fresh {
		st.Activity, st.ActivityError = last.activity, last.err
		return st, nil
	}
	s.mu.Lock()
	s.activity[queue] = activityRead{at: now, activity: st.Activity, err: st.ActivityError}
	s.mu.Unlock()
	return st, nil
}

// New returns the console's handler over src.
func New(src Source, o Options) http.Handler { return newServer(src, o).handler() }

func newServer(src Source, o Options) *server {
	o.defaults()
	b := make([]byte, 16)
	rand.Read(b)
	s := &server{src: src, o: o, token: hex.EncodeToString(b), follow: newFollow(o.Follow), activity: map[string]activityRead{}, keys: map[string]keysRead{}}
	s.pages = map[string]*template.Template{}
	for _, p := range []string{"queues", "queue", "key", "job", "confirm", "error"} {
		s.pages[p] = template.Must(template.New("").Funcs(funcs).ParseFS(assets,
			"templates/layout.html", "templates/parts.html", "templates/"+p+".html"))
	}
	return s
}

// maxForm bounds a request's body: the console's forms are a few fields.
const maxForm = 64 << 10

func (s *server) handler() http.Handler {
	static, _ := fs.Sub(assets, "static")
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", filesOnly(http.FileServerFS(static))))
	mux.HandleFunc("GET /{$}", s.queues)
	mux.HandleFunc("GET /queues/{queue}", s.named(s.queue))
	mux.HandleFunc("GET /queues/{queue}/jobs/{id}", s.named(s.job))
	mux.HandleFunc("GET /queues/{queue}/keys/{key}", s.named(s.key))
	mux.HandleFunc("GET /queues/{queue}/confirm", s.named(s.confirm))
	mux.HandleFunc("POST /queues/{queue}/actions/{action}", s.named(s.act))
	mux.HandleFunc("POST /queues/{queue}/follow", s.named(s.followJobs))
	// Actions are POSTs with the token; cross-origin POSTs a browser
	// sends (Sec-Fetch-Site, Origin) are refused before that.
	h := http.NewCrossOriginProtection().Handler(http.MaxBytesHandler(mux, maxForm))
	return s.guard(h)
}

// named answers 400 for a queue name no queue can have, before any admin
// call: a bad address is the caller's error, not the stack's.
func (s *server) named(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if q := r.PathValue("queue"); !api.ValidQueueName(q) {
			s.render(w, r, http.StatusBadRequest, "error", "Not a queue name", nil,
				fmt.Errorf("%q is not a queue name: a queue's name is 1 to 80 letters, digits, '_', '.' and '-'", q))
			return
		}
		h(w, r)
	}
}

// filesOnly serves the files of a file server and nothing of its
// folders: no listing of what the console embeds.
func filesOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guard refuses host names it does not serve and requests without the
// console's login (if any), and sets the headers every answer carries.
func (s *server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) && !s.allowedHost(r.Host) {
			http.Error(w, "slotq console: this console serves only loopback host names (127.0.0.1, [::1], localhost) and the names it is started with (--allow-host)", http.StatusMisdirectedRequest)
			return
		}
		if s.o.Auth != "" && !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="slotq console", charset="UTF-8"`)
			http.Error(w, "slotq console: log in", http.StatusUnauthorized)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// allowedHost reports whether host (a Host header) is one of AllowHosts.
func (s *server) allowedHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	for _, a := range s.o.AllowHosts {
		if strings.EqualFold(host, a) {
			return true
		}
	}
	return false
}

// authorized reports whether r carries the console's basic
// authentication, compared in constant time.
func (s *server) authorized(r *http.Request) bool {
	user, pass, ok := r.BasicAuth()
	want := sha256.Sum256([]byte(s.o.Auth))
	got := sha256.Sum256([]byte(user + ":" + pass))
	return ok && subtle.ConstantTimeCompare(want[:], got[:]) == 1
}

// loopbackHost reports whether a Host header names this machine by a
// loopback address or "localhost".
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// ErrRemote is returned by Listen for an address that is not a loopback
// one when remote access is not allowed.
var ErrRemote = errors.New("the console can pause, cancel and purge: it listens on loopback addresses only unless remote access is allowed")

// ErrRemoteUnguarded is Run's answer to remote access without the host
// names to serve or without an authentication.
var ErrRemoteUnguarded = errors.New("remote access needs the host names to serve (--allow-host) and a login: SLOTQ_CONSOLE_AUTH=user:password, or --auth-proxy behind a proxy that authenticates")

// Timeouts are the console server's: a client that sends its request
// slowly (its header or its body a byte at a time), or holds an idle
// connection, is cut off instead of holding the console's connections.
// A zero field is DefaultTimeouts'.
type Timeouts struct {
	// ReadHeader bounds the reading of a request's header.
	ReadHeader time.Duration
	// Read bounds the reading of a whole request, its body included.
	Read time.Duration
	// Write bounds the writing of an answer: a page waits for a few
	// admin calls.
	Write time.Duration
	// Idle bounds the wait for the next request on a kept-alive
	// connection.
	Idle time.Duration
}

// DefaultTimeouts are the console server's timeouts by default.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 15 * time.Second, Write: time.Minute, Idle: time.Minute}

func (t Timeouts) withDefaults() Timeouts {
	d := DefaultTimeouts
	for _, f := range []struct{ v, def *time.Duration }{{&t.ReadHeader, &d.ReadHeader}, {&t.Read, &d.Read}, {&t.Write, &d.Write}, {&t.Idle, &d.Idle}} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	t.ReadHeader = min(t.ReadHeader, t.Read)
	return t
}

// Server is the HTTP server of the console h with t's timeouts: what Run
// serves, and what a runtime that serves the console beside other things
// (pkg/local) serves, so neither leaves a slow client a connection.
func Server(h http.Handler, t Timeouts) *http.Server {
	t = t.withDefaults()
	return &http.Server{Handler: h, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write, IdleTimeout: t.Idle}
}

// check refuses Options that would expose the console unguarded.
func (o *Options) check() error {
	if o.AllowRemote && (len(o.AllowHosts) == 0 || (o.Auth == "" && !o.AuthProxy)) {
		return fmt.Errorf("console: %w", ErrRemoteUnguarded)
	}
	if o.Auth != "" && !strings.Contains(o.Auth, ":") {
		return fmt.Errorf("console: the login must be user:password")
	}
	return nil
}

// Listen listens on addr ("127.0.0.1:3002"; port 0 picks a free one).
// Unless allowRemote, addr must be a loopback address or "localhost":
// the console can pause queues, cancel jobs and purge queues, and
// anyone who can reach it can do so, so exposing it is the operator's
// explicit choice (behind their own access control).
func Listen(ctx context.Context, addr string, allowRemote bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("console: listen on %q: %w", addr, err)
	}
	if !allowRemote && !loopbackHost(host) {
		return nil, fmt.Errorf("console: listen on %s: %w", addr, ErrRemote)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("console: listen: %w", err)
	}
	return ln, nil
}

// URL is the console's address on ln, for people: "http://127.0.0.1:3002/".
func URL(ln net.Listener) string { return "http://" + ln.Addr().String() + "/" }

// Run serves the console over src on addr (DefaultAddr if empty) until
// ctx ends: what `slotq console` does, and what `slotq local` runs
// beside the stack. o.AllowRemote decides both the address it may bind
// and the host names it serves (see Listen). ready, if set, is called
// with the console's URL once it listens, for the command to print.
func Run(ctx context.Context, src Source, addr string, o Options, ready func(url string)) error {
	if addr == "" {
		addr = DefaultAddr
	}
	if err := o.check(); err != nil {
		return err
	}
	ln, err := Listen(ctx, addr, o.AllowRemote)
	if err != nil {
		return err
	}
	srv := Server(New(src, o), o.Timeouts)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	if ready != nil {
		ready(URL(ln))
	}
	select {
	case err := <-done:
		return fmt.Errorf("console: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("console: shut down: %w", err)
	}
	return nil
}
