package main

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestHelpTexts holds the help to what slotq does now: a queue's limit
// has three forms (not one interval), a key runs key_max_running jobs at
// once (not always one), the skew is bounded by the limit's average
// spacing, the target timeout bounds every kind of target; and no flag
// says its default twice.
func TestHelpTexts(t *testing.T) {
	root := newRootCmd(io.Discard, io.Discard)
	stale := []string{
		"one start per queue interval", // the limit has three forms
		"same key run one at a time",   // key_max_running
		"less than the interval;",      // a rate's or window's spacing too
		"of an HTTP or Lambda target",  // Go handlers too
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		texts := []string{c.Short, c.Long}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			_, usage := pflag.UnquoteUsage(f)
			one := pflag.NewFlagSet("", pflag.ContinueOnError)
			one.AddFlag(f)
			line := one.FlagUsagesWrapped(0) // as the help prints it
			if strings.Count(line, "(default") > 1 {
				t.Errorf("%s --%s says its default twice: %s", c.CommandPath(), f.Name, line)
			}
			texts = append(texts, usage)
		})
		for _, s := range texts {
			for _, p := range stale {
				if strings.Contains(s, p) {
					t.Errorf("%s: help says %q: %s", c.CommandPath(), p, s)
				}
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if !strings.Contains(root.Short, "limit") {
		t.Errorf("the root help's line does not name a queue's limit: %s", root.Short)
	}
}
