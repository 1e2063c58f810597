// Package console is slotq's web console: an HTTP UI over the admin
// function for people watching and steering queues. It shows the
// queues with their health at a glance, a page per queue with a live
// timeline of its starts against their slots, and a page per job with
// its record and history; it pauses, resumes and purges queues and
// cancels and retries jobs, each after a confirmation.
//
// It sits beside cmd/slotq at the edge of the flow: everything it shows
// or does goes through Source, the admin operations it calls, which
// FromClient implements over pkg/client. So it needs no permission its
// operator does not already have, and it keeps no state of its own but
// the jobs it follows for the timeline; the timeline's marks are the
// queue's starts as the admin operation starts lists them.
//
// Pages are html/template, styles and a small polling script are
// embedded (go:embed); the timeline is SVG drawn by the templates.
// Nothing is built. Run serves it; New and Listen are its parts.
package console
