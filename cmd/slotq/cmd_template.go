package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/slotq/slotq"
	"github.com/slotq/slotq/internal/samgen"
)

// templateCmd writes a project's SAM template: slotq's, of the version
// this command was built from, with the project's stack.yaml merged in
// (internal/samgen; docs/deploy.md).
func templateCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCmdLine("template", "", "Writes the SAM template of a project's slotq stack: slotq's template.yaml, of the slotq\n"+
		"version this command is built from, with the project's own part (--stack, such as its\n"+
		"parameters and its worker's environment) merged in. In a project whose go.mod requires\n"+
		"slotq, `go tool slotq template --stack stack.yaml -o template.yaml` writes the stack of\n"+
		"the version it requires: upgrading slotq is `go get` and this command again.\n"+
		"See docs/deploy.md for what stack.yaml may hold.", stdout, stderr)
	part := c.fs.String("stack", "", "the project's part of the stack (YAML); none: slotq's stack as it is")
	out := c.fs.String("o", "", "write the template to this file instead of stdout")
	if _, code := c.parse(args, 0, 0); code >= 0 {
		return code
	}
	var mine []byte
	if *part != "" {
		b, err := os.ReadFile(*part)
		if err != nil {
			fmt.Fprintf(stderr, "slotq template: %v\n", err)
			return exitUsage
		}
		mine = b
	}
	t, err := samgen.Generate(slotq.Template, mine)
	if err != nil {
		fmt.Fprintf(stderr, "slotq template: %s: %v\n", *part, err)
		return exitFail
	}
	header := fmt.Sprintf("# Written by `slotq template` (slotq %s) from slotq's template.yaml", version())
	if *part != "" {
		header += " and " + *part
	}
	t = append([]byte(header+". Do not edit:\n# change "+orDefault(*part, "the command line")+" and run it again.\n"), t...)
	if *out == "" {
		_, err = stdout.Write(t)
	} else {
		err = os.WriteFile(*out, t, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "slotq template: %v\n", err)
		return exitFail
	}
	return exitOK
}

// version is the slotq module's version this binary was built from.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	if info.Main.Path == "github.com/slotq/slotq" {
		return info.Main.Version
	}
	for _, m := range info.Deps {
		if m.Path == "github.com/slotq/slotq" {
			if m.Replace != nil {
				return m.Version + " => " + m.Replace.Path
			}
			return m.Version
		}
	}
	return "(unknown)"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
