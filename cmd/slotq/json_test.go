package main

import (
	"encoding/json"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// userData are the fields whose values are the user's own JSON (a job's
// payload and result): their keys are whatever the user chose.
var userData = map[string]bool{"payload": true, "result": true}

// notSnake returns the object keys of v, at their paths, that are not
// snake_case, outside the user's own data.
func notSnake(v any, path string) []string {
	var bad []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if !snakeKey.MatchString(k) {
				bad = append(bad, path+"."+k)
			}
			if !userData[k] {
				bad = append(bad, notSnake(e, path+"."+k)...)
			}
		}
	case []any:
		for _, e := range x {
			bad = append(bad, notSnake(e, path+"[]")...)
		}
	}
	return bad
}

// checkSnake fails t unless every JSON value of out (one document, or
// JSON lines) has snake_case keys only.
func checkSnake(t *testing.T, what, out string) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	n := 0
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Errorf("%s: not JSON: %v\n%s", what, err, out)
			return
		}
		n++
		if bad := notSnake(v, ""); len(bad) > 0 {
			slices.Sort(bad)
			t.Errorf("%s prints keys that are not snake_case: %s", what, strings.Join(bad, ", "))
		}
	}
	if n == 0 {
		t.Errorf("%s printed no JSON", what)
	}
}

// TestJSONSnakeCase runs every command that talks to a stack with --json
// against the local runtime, and holds each output to snake_case keys, as
// every JSON slotq prints is. It fails if a command with --json is not
// among those it runs.
func TestJSONSnakeCase(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	runs := [][]string{
		{"queues", "create", "emails", "--interval", "10ms", "--max-attempts", "1"},
		{"queues", "create", "tenants", "--rate", "100/1s", "--key-rate", "5/1s"},
		{"enqueue", "emails", "--kind", "echo", "--id", "e1", "--payload", `{"camelCase":1}`, "--wait"},
		{"enqueue", "tenants", "--kind", "echo", "--id", "t1", "--key", "acme"},
		{"enqueue", "emails", "--kind", "fail", "--id", "f1", "--payload", `{"times":9}`, "--wait"},
		{"queues", "list"},
		{"queues", "stats", "emails"},
		{"queues", "starts", "emails", "--since", "5m"},
		{"queues", "configure", "emails", "--max-attempts", "1"},
		{"queues", "pause", "emails", "--for", "1m"},
		{"queues", "resume", "emails"},
		{"jobs", "get", "emails", "e1"},
		{"jobs", "list", "emails", "--status", "failed"},
		{"jobs", "retry", "emails", "f1"},
		{"enqueue", "emails", "--kind", "echo", "--id", "c1", "--not-before", "1h"},
		{"jobs", "cancel", "emails", "c1"},
		{"keys", "set", "tenants", "acme", "--rate", "20/1s"},
		{"keys", "list", "tenants"},
		{"keys", "get", "tenants", "acme"},
		{"keys", "clear", "tenants", "acme"},
		{"schedules", "create", "emails", "beat", "--every", "1h", "--kind", "echo"},
		{"schedules", "list", "emails"},
		{"schedules", "get", "emails", "beat"},
		{"schedules", "pause", "emails", "beat"},
		{"schedules", "resume", "emails", "beat"},
		{"schedules", "delete", "emails", "beat"},
		{"timeline", "emails", "e1"},
		{"redrive"},
		{"queues", "purge", "emails", "--yes"},
		{"queues", "delete", "emails", "--yes"},
	}
	ran := map[string]bool{}
	for _, args := range runs {
		out, errOut, code := c.run(append(args, "--json")...)
		what := "slotq " + strings.Join(args, " ") + " --json"
		if code != 0 && !(code == exitJobFailed && slices.Contains(args, "--wait")) {
			t.Errorf("%s: exit %d\n%s", what, code, errOut)
			continue
		}
		checkSnake(t, what, out)
		cmd, _, err := newRootCmd(io.Discard, io.Discard).Find(args)
		if err == nil {
			ran[cmd.CommandPath()] = true
		}
	}
	// Commands with --json this test does not run, and why.
	skip := map[string]string{
		"slotq local":   "prints JSON lines of a running stack: TestLocalJSON",
		"slotq demo":    "runs a workload for seconds",
		"slotq console": "serves a web page",
		"slotq invoke":  "prints the function's own answer",
	}
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Runnable() && !cmd.Hidden && (cmd.Flags().Lookup("json") != nil || cmd.InheritedFlags().Lookup("json") != nil) &&
			!ran[cmd.CommandPath()] && skip[cmd.CommandPath()] == "" {
			t.Errorf("%s has --json, and TestJSONSnakeCase does not run it", cmd.CommandPath())
		}
		for _, s := range cmd.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd(io.Discard, io.Discard))
}
