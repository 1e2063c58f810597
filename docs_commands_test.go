package slotq_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/testenv"
)

// TestDocsCommands runs the commands of the docs' shell blocks as a
// newcomer meets them: the pages in docs/README.md's order, each page's
// blocks top to bottom, against a local runtime this test starts (slotq
// local, built from this tree; `slotq` and `./slotq` are that build). A
// command that fails (any exit but 0) fails the test, and so does output
// that no longer matches what the page shows: in a block of `$ command`
// lines, each line shown under a command must appear in its output, in
// order (runs of spaces count as one; "…" stands for any text; "..." for
// lines left out).
//
// Then each page that does not say its commands follow another page's
// runs alone, on a runtime of its own: a page whose commands need an
// earlier page's must say so ("The commands on this page follow …" with
// a link to that page).
//
// The pages' address of the local runtime, http://127.0.0.1:3001, stands
// for the test's. Some commands are not run: those that serve until stopped, build the
// Lambda bootstraps, or need AWS, SAM or the emulators (notRun says which
// and why; other tests run them).
func TestDocsCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds slotq and runs the docs' commands")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "slotq"), "./cmd/slotq")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/slotq: %v\n%s", err, out)
	}

	var pages []docPage
	for _, p := range pagesInOrder(t) {
		pages = append(pages, readDocPage(t, p))
	}
	ran, skipped := 0, 0
	for _, p := range pages {
		for _, c := range p.cmds {
			if c.skip != "" {
				skipped++
			} else {
				ran++
			}
		}
	}
	t.Logf("%d pages, %d commands to run, %d not run", len(pages), ran, skipped)
	if ran < 40 {
		t.Fatalf("found %d commands to run in the docs' shell blocks; they hold more: is the block pattern broken?", ran)
	}

	t.Run("InOrder", func(t *testing.T) {
		rt := startRuntime(t, bin, root)
		for _, p := range pages {
			if !rt.runPage(t, bash, p) {
				return // what follows depends on it
			}
		}
	})
	t.Run("PagesAlone", func(t *testing.T) {
		for _, p := range pages[1:] {
			if len(p.after) > 0 || !slices.ContainsFunc(p.cmds, func(c docCmd) bool { return c.skip == "" }) {
				continue
			}
			t.Run(filepath.Base(p.path), func(t *testing.T) {
				rt := startRuntime(t, bin, root)
				if !rt.runPage(t, bash, p) {
					t.Errorf("%s: its commands fail when run alone: does it follow another page's? Then it says so (\"The commands on this page follow [that page](…)\")", p.path)
				}
			})
		}
	})
}

// notRun are the commands the docs test does not run, by what they start
// with, and why.
var notRun = []struct{ prefix, why string }{
	{"make ", "make run and make start-lambda serve until stopped (TestMakeRunStopsOnKill runs make run), make test is the test suite, make invoke and make dynamodb-local build or start what other tests run"},
	{"go build -o slotq ./cmd/slotq", "the test built slotq: `slotq` and `./slotq` are that build"},
	{"sam ", "needs AWS SAM and an account"},
	{"go get ", "a team's own module"},
	{"go tool slotq template", "a team's own module (cmd/slotq's template tests run it)"},
	{"moto_server ", "starts an emulator (internal/dev's tests run it)"},
	{"export AWS_ENDPOINT_URL", "points at the emulators its block starts, which this test does not"},
	{"slotq local", "serves until stopped (the test runs it, and TestLocal* in cmd/slotq)"},
	{"slotq console", "serves until stopped (cmd/slotq TestConsoleCommands, internal/cli/console's browser test)"},
	{"slotq demo", "runs a workload for tens of seconds (cmd/slotq's demo tests)"},
	{"slotq bench", "runs a workload for tens of seconds (make bench)"},
	{"slotq sam ", "builds the Lambda bootstraps (cmd/slotq's sam tests, examples/acme's test)"},
	{"cd examples/producers/typescript && npm ci", "installs the npm packages (examples/producers' test runs it)"},
}

// envPrefix is the variables a command line sets for its command alone.
var envPrefix = regexp.MustCompile(`^([A-Z_][A-Z0-9_]*=("[^"]*"|'[^']*'|\S*)\s+)+`)

// skipReason is why the docs test does not run cmd, or "".
func skipReason(cmd string) string {
	cmd = strings.TrimPrefix(envPrefix.ReplaceAllString(cmd, ""), "./")
	for _, n := range notRun {
		if strings.HasPrefix(cmd, n.prefix) {
			return n.why
		}
	}
	if strings.HasPrefix(cmd, "aws ") && !strings.Contains(cmd, "--endpoint-url") {
		return "calls a deployed stack on AWS"
	}
	return ""
}

// docPage is one page's shell commands, in order, and the pages it says
// its commands follow.
type docPage struct {
	path  string
	after []string
	cmds  []docCmd
}

// docCmd is one command of a page: where it is, what it runs, the lines
// the page shows of its output (a `$` block's), and why it is not run.
type docCmd struct {
	line int
	text string
	want []string
	skip string
}

var (
	mdPageLink = regexp.MustCompile(`\]\(([^)#\s]+\.md)\)`)
	shellFence = regexp.MustCompile("^ {0,3}```(sh|shell|bash|console)\\s*$")
	followsRe  = regexp.MustCompile(`(?s)[Tt]he commands on this page follow(.*?)\.(\s|$)`)
)

// pagesInOrder are the README and the pages docs/README.md lists, in its
// order, as paths from the repository's root.
func pagesInOrder(t *testing.T) []string {
	b, err := os.ReadFile("docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, m := range mdPageLink.FindAllStringSubmatch(string(b), -1) {
		p := filepath.ToSlash(filepath.Clean(filepath.Join("docs", m[1])))
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) < 10 {
		t.Fatalf("docs/README.md lists %d pages; it lists more: is the link pattern broken?", len(out))
	}
	return out
}

// readDocPage reads a page's shell blocks into its commands.
func readDocPage(t *testing.T, path string) docPage {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	p := docPage{path: path}
	for _, m := range followsRe.FindAllStringSubmatch(strings.Join(prose(text), "\n"), -1) {
		for _, l := range mdPageLink.FindAllStringSubmatch(m[1], -1) {
			p.after = append(p.after, filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(path), l[1]))))
		}
	}
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		if !shellFence.MatchString(lines[i]) {
			continue
		}
		start := i + 1
		end := start
		for end < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[end]), "```") {
			end++
		}
		p.cmds = append(p.cmds, blockCommands(lines[start:end], start+1)...)
		i = end
	}
	return p
}

// blockCommands are the commands of a block whose first line is line n
// of its page: the `$ ` lines with the output shown under each, or, in a
// block without prompts, each line that is not blank or a comment (a
// line ending in a backslash goes on on the next).
func blockCommands(lines []string, n int) []docCmd {
	prompted := slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "$ ") })
	var cmds []docCmd
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if prompted {
			if !strings.HasPrefix(l, "$ ") {
				if len(cmds) > 0 {
					cmds[len(cmds)-1].want = append(cmds[len(cmds)-1].want, l)
				}
				continue
			}
			l = strings.TrimPrefix(l, "$ ")
		} else if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		c := docCmd{line: n + i, text: l}
		for strings.HasSuffix(strings.TrimRight(c.text, " "), "\\") && i+1 < len(lines) {
			i++
			c.text = strings.TrimRight(strings.TrimSuffix(strings.TrimRight(c.text, " "), "\\"), " ") + " " + strings.TrimSpace(lines[i])
		}
		c.text = strings.ReplaceAll(c.text, "go run ./cmd/slotq ", "slotq ") // the same program, built once
		c.skip = skipReason(strings.TrimSpace(c.text))
		cmds = append(cmds, c)
	}
	return cmds
}

// runtime is a local runtime the docs test started, and the folder its
// commands run in.
type runtime struct {
	url string
	env []string
	dir string
	log string
}

// startRuntime starts slotq local on a free loopback port, its Invoke API
// what the commands call (SLOTQ_ENDPOINT_URL), and stops it when t ends.
// The commands run in a folder of their own, with ./slotq the build, and
// events/ and examples/ the repository's.
func startRuntime(t *testing.T, bin, root string) *runtime {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	dir := t.TempDir()
	for name, target := range map[string]string{"slotq": filepath.Join(bin, "slotq"), "events": filepath.Join(root, "events"), "examples": filepath.Join(root, "examples")} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") || strings.HasPrefix(k, "SLOTQ_") || strings.HasPrefix(k, "OTEL_") || k == "PATH" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "SLOTQ_ENDPOINT_URL=http://"+addr)

	log := filepath.Join(dir, "local.log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(filepath.Join(bin, "slotq"), "local", "--addr", addr, "--console", "",
		"--template", filepath.Join(root, "template.yaml"), "--resume-every", "1s", "--log", "info")
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, dir, f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(testenv.Patience):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	testenv.WaitFor(t, "slotq local to serve its Invoke API", func() bool {
		select {
		case <-done:
			b, _ := os.ReadFile(log)
			t.Fatalf("slotq local ended:\n%s", b)
		default:
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		_ = c.Close()
		return true
	})
	return &runtime{url: "http://" + addr, env: env, dir: dir, log: log}
}

// runPage runs p's commands in order, each in bash with the exports of
// the page's earlier commands, and reports whether they all did what the
// page says.
func (rt *runtime) runPage(t *testing.T, bash string, p docPage) bool {
	t.Helper()
	var exports []string
	for _, c := range p.cmds {
		if c.skip != "" {
			continue
		}
		// The pages' local runtime is on its default address; this
		// test's is where it found a free port.
		text := strings.ReplaceAll(c.text, "http://127.0.0.1:3001", rt.url)
		script := strings.Join(append(slices.Clone(exports), text), "\n")
		ctx, cancel := context.WithTimeout(t.Context(), testenv.Patience)
		cmd := exec.CommandContext(ctx, bash, "-c", script)
		cmd.Env, cmd.Dir = rt.env, rt.dir
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("%s:%d: %s\n%v\n%s", p.path, c.line, c.text, err, out)
			return false
		}
		if miss := missing(c.want, string(out)); miss != "" {
			t.Errorf("%s:%d: %s\nthe page shows %q, which its output lacks:\n%s", p.path, c.line, c.text, miss, out)
			return false
		}
		if strings.HasPrefix(c.text, "export ") {
			exports = append(exports, c.text)
		}
	}
	return true
}

var spaces = regexp.MustCompile(`[ \t]+`)

// missing returns the first line of want that out does not show, in
// order, or "". Runs of spaces count as one, "…" stands for any text, and
// a line "..." (or "…") for lines left out.
func missing(want []string, out string) string {
	norm := func(s string) string { return strings.TrimSpace(spaces.ReplaceAllString(s, " ")) }
	got := strings.Split(out, "\n")
	at := 0
	for _, w := range want {
		w = norm(w)
		if w == "" || w == "..." || w == "…" {
			continue
		}
		parts := strings.Split(w, "…")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(strings.TrimSpace(parts[i]))
		}
		re := regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
		for at < len(got) && !re.MatchString(norm(got[at])) {
			at++
		}
		if at == len(got) {
			return w
		}
		at++
	}
	return ""
}

// TestMissing holds the docs test's output matching to its rules.
func TestMissing(t *testing.T) {
	out := "queue  emails\nstatus    succeeded\nhistory   2026-11-22T10:00:00.000Z  rerun by ops: ticket 3\n"
	for _, c := range []struct {
		want []string
		miss string
	}{
		{[]string{"...", "status succeeded"}, ""},
		{[]string{"queue emails", "history … rerun by ops: ticket 3"}, ""},
		{[]string{"status succeeded", "queue emails"}, "queue emails"}, // in order
		{[]string{"status failed"}, "status failed"},
		{[]string{"status"}, "status"}, // a whole line
	} {
		if got := missing(c.want, out); got != c.miss {
			t.Errorf("missing(%q) = %q, want %q", c.want, got, c.miss)
		}
	}
}

// TestDocsIndex holds docs/README.md, the order the docs test runs the
// pages in, to its form: its entries numbered 1, 2, 3, … and every page
// of docs/ listed.
func TestDocsIndex(t *testing.T) {
	b, err := os.ReadFile("docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, l := range strings.Split(string(b), "\n") {
		m := regexp.MustCompile(`^(\d+)\. `).FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n++
		if m[1] != fmt.Sprint(n) {
			t.Errorf("docs/README.md:%d: entry numbered %s, want %d", i+1, m[1], n)
		}
	}
	listed := pagesInOrder(t)
	all, _ := filepath.Glob("docs/*.md")
	for _, p := range all {
		if p != "docs/README.md" && !slices.Contains(listed, filepath.ToSlash(p)) {
			t.Errorf("docs/README.md does not list %s", p)
		}
	}
}

// TestReadDocPage: a page's shell blocks become its commands (a
// continued line joined, comments and other blocks left out, a `$`
// block's output kept with its command), and a page that says its
// commands follow another's names that page.
func TestReadDocPage(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "docs", "p.md")
	if err := os.MkdirAll(filepath.Dir(page), 0o755); err != nil {
		t.Fatal(err)
	}
	text := "# P\n\nThe commands on this page follow those of [the usage page](usage.md).\n\n" +
		"```sh\n# a comment\nslotq queues create a \\\n    --interval 1s\nmake run   # not run\n```\n\n" +
		"```go\nslotq not a command\n```\n\n" +
		"```console\n$ slotq queues list\nNAME  LIMITS\na     …\n```\n"
	if err := os.WriteFile(page, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	p := readDocPage(t, page)
	if want := []string{filepath.ToSlash(filepath.Join(dir, "docs", "usage.md"))}; !slices.Equal(p.after, want) {
		t.Errorf("after %v, want %v", p.after, want)
	}
	var got []string
	for _, c := range p.cmds {
		got = append(got, fmt.Sprintf("%d %s skip=%v want=%q", c.line, c.text, c.skip != "", c.want))
	}
	want := []string{
		`7 slotq queues create a --interval 1s skip=false want=[]`,
		`9 make run   # not run skip=true want=[]`,
		`17 slotq queues list skip=false want=["NAME  LIMITS" "a     …"]`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("commands\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
