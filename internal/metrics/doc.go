// Package metrics writes slotq's CloudWatch metrics in the Embedded
// Metric Format (EMF): JSON log lines that CloudWatch Logs turns into
// metrics, written through the functions' own slog output, so publishing
// them costs no API call, no permission and no latency.
//
// A Recorder is the engine's Observer (engine.Options.Observer) and counts
// what the worker and the resume function did; the enqueue handler adds
// accepted and refused jobs. Each handler calls Flush once its invocation
// is done, which writes one line per queue. The metric names, units and
// dimensions are listed here only (Metrics): template.yaml's dashboard
// and alarms name them, and a test holds the two together.
//
// Where it sits: internal/lambdafn/{worker,resume,enqueue} → metrics →
// engine's events. docs/operations.md says what each metric means.
package metrics
