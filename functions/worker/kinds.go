package main

import "github.com/slotq/slotq/pkg/target"

// kinds returns the Go handlers this worker runs, by job kind. It ships
// with none: jobs name HTTP or Lambda targets. To run Go code in the
// worker itself, register it here, for example
//
//	m.HandleFunc("send-email", func(ctx context.Context, j *job.Job) error { … })
//
// A job whose kind has no handler fails without retry.
func kinds() *target.Mux {
	m := target.NewMux()
	return m
}
