package benchcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/slotq/slotq/internal/bench/benchdoc"
	"github.com/slotq/slotq/internal/bench/costs"
	"github.com/slotq/slotq/internal/bench/costs/costopt"
	"github.com/slotq/slotq/internal/dev/dynamolocal"
	"github.com/slotq/slotq/internal/dev/motoserver"
)

// runCosts measures what a job costs on AWS (costs.Run) on DynamoDB Local
// and moto_server, and prints the report docs/costs.md holds; with --doc
// and --table it writes it there too. It takes the flags of `slotq costs`.
func runCosts(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const name = "slotq-bench costs"
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var o costopt.Options
	verbose := o.AddFlags(fs)
	doc := benchdoc.Flags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", name, fs.Arg(0))
		return exitUsage
	}
	out := doc.With(name, fs)
	if err := out.Check(o.Runs); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitUsage
	}
	o.Progress = stderr
	if *verbose {
		o.Calls = stderr
	}
	var report bytes.Buffer
	w := stdout
	if out.Doc != "" {
		w = &report // printed by Finish, as the doc holds it
	}
	if err := costs.Run(ctx, w, o, emulators); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitFail
	}
	if err := out.Finish(stdout, benchdoc.Table{Command: out.Command, Body: report.String()}); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitFail
	}
	return exitOK
}

// emulators starts DynamoDB Local and moto_server on loopback
// (costs.Emulators).
func emulators(ctx context.Context) ([]map[string]string, func(), error) {
	db, err := dynamolocal.Start(ctx)
	if err != nil {
		return nil, nil, err
	}
	srv, err := motoserver.Start()
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	stop := func() { srv.Close(); db.Close() }
	return []map[string]string{db.Env(), srv.Env()}, stop, nil
}
