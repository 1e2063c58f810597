// Package engine holds slotq's use cases: enqueue, work, resume and the
// admin operations. It is plain Go over two small interfaces it declares,
// State (internal/memstore, internal/dynamostore) and Transport (internal/memstore,
// internal/sqstransport), plus a Runner that runs a job's target (internal/dispatch).
// Time comes from Options.Now, so tests can run an hour of slots in a
// testing/synctest bubble.
//
// The flow of one job:
//
//	Enqueue ─ Take tickets+slots ─ CreateJobs ─ Send (delay) or park
//	Work    ─ a delivery's steps (work.go): read the record ─ wait for the
//	          gate and pass it, reserving the start (gate.go) ─ claim ─
//	          sleep to the start ─ run (start.go) ─ record the outcome,
//	          or retry or dead-letter (outcome.go)
//	Resume  ─ ListDue (the due index: what is due by now, any queue) ─
//	          many queues' passes at once (passes.go), each
//	          per queue with something due, under its lease (resume.go):
//	          lift a timed pause ─ re-ticket held jobs in line order (a
//	          bounded round per run) ─ release due jobs (release.go) ─
//	          hand on keys past their lease (reap.go);
//	          per schedule due (schedules_run.go): enqueue its occurrences up
//	          to a lead ahead ─ advance it by compare-and-set
//
// Every function in functions/ (through internal/lambdafn) and the local
// runtime is a thin shell around one of these methods.
//
// With Options.Tracer, each of these makes OpenTelemetry spans (trace.go):
// an enqueue call, each attempt from the gate to its outcome, the
// target's call, a resume run and its release rounds; a job's W3C trace
// context rides in its record (job.Job.TraceParent) from its producer to
// its target either way.
//
// Where it sits: in the middle of slotq's runtime, the packages at the
// top of internal/ that the functions link. It imports internal/slot (the
// gate's arithmetic, pure), internal/job, internal/attempt, internal/clock,
// internal/schedule (a schedule's occurrences, pure) and internal/input,
// and no AWS package; the stores and transports
// (internal/memstore, internal/dynamostore, internal/sqstransport) import
// it for its interfaces. Nothing under internal/dev (emulators, SAM
// tooling, cost meters, test rigs) or internal/cli (console, timeline) is
// imported by it. docs/algorithm.md explains the rules, with a glossary.
//
// The engine by role. Engine is the public face: its methods (api.go)
// delegate to one role each, a type over the parts every role shares
// (core: the stores, the clock, the options, the log, the tracer):
//
//	enqueuer     takes producers' jobs (Enqueue)
//	worker       runs a delivered message through the gate to its target
//	             and records its outcome (Work)
//	resumer      the resume function's pass (Resume, Reindex, Redrive)
//	admin        queues, jobs, schedules, configure and retry
//	keyLanes     keys: lanes, hand-offs, meters, reaping (Keys, Lanes)
//	waitingRoom  a bounded queue's booking horizon and its waiting room
//
// A role asks another for what is the other's through core
// (e.worker.reticket, e.room.bookNext, e.lanes.arrive). The store is one
// interface per part of the table (stores.go): QueueStore, LineStore,
// JobStore, DueStore, KeyStore and RoomStore, which State gathers.
//
// The files, by part:
//
//	engine.go     Engine, core and the roles' types, Options, New; the
//	              Runner a target runs through
//	api.go        Engine's methods, each delegating to its role
//	state.go      the store's requests and errors; the gate's request
//	              (GateRequest.Decide) and a booked start's (AdmitRequest)
//	stores.go     the store's interfaces by part, gathered by State
//	due.go        the schema mark's record (Schema, Cursor) and the due
//	              index: when the resume function looks at a job, a
//	              queue, a lane or a waiting room
//	transport.go  the Transport interface
//	schema.go     the record layout this engine writes; does the table
//	              need a rebuild (the schema mark)
//	enqueue.go    Enqueue: the queue, new jobs, messages, records, answers
//	book.go       what an enqueue books: tickets and slots from the take,
//	              counts on the keys' lanes, queued or parked (place)
//	work.go       Work: the delivery, its step machine, readRecord
//	booked.go     the gate of a booked start: a read (admitBooked)
//	gate.go       the way to the gate and through it: wait for the turn,
//	              the hold for lower tickets, the key's steps, decide,
//	              pass, refused, parkForGate, OnGateDone
//	start.go      claim, sleep to the start (or give it up), run the
//	              target under its timeout; PanicError
//	outcome.go    record the outcome: succeeded, retry or dead letter;
//	              end the attempt
//	recover.go    await a record; recover a lost attempt; expire the jobs
//	              of a deleted or purged queue
//	sendback.go   a job that does not start now: hand-back, park,
//	              re-ticket; fail one sent back too often
//	slowdown.go   a target's "slow down"
//	debounce.go   debounce: a job of a debounce key joins the one that
//	              waits (one conditional write on the key's item), and
//	              that job's worker closes it when it ends (DebounceStore)
//	lane.go       lanes: waiting on a key or a running place; LaneFigures
//	handoff.go    handing a key or a place on as an attempt ends
//	reap.go       the resume function's look at a due lane
//	meter.go      keyed limits: a key's own meter
//	resume.go     Resume: the pass per queue under its lease, pauses,
//	              release rounds
//	release.go    re-ticket held jobs in order; release due jobs, in
//	              batches of a send and its writes, many at once
//	urgency.go    a resume run's order and time: the most urgent due
//	              entries first, a wave at a time, its backlog
//	passes.go     a resume run's passes at once: waves that overlap,
//	              bounded by ResumeConcurrency
//	reindex.go    Reindex and the rebuild of the records for the due
//	              index, resumable from the schema mark's cursor
//	schedules.go  schedules: create, read, pause, resume, delete
//	schedules_run.go  the resume function's pass: their occurrences
//	admin.go      queues: create, configure, pause, purge, delete, stats,
//	              jobs, cancel
//	change.go     ChangeConfig: change the settings given, keep the others
//	reslot.go     re-slot waiting jobs after a limit changed: book the
//	              line again under the new limits (Reconfigure, rebook)
//	move.go       write the moves a re-slot booked (moveAll, moveKeyed)
//	keys.go       a queue's keys and their limits
//	waitroom.go   the booking horizon and the waiting room: admit beyond
//	              the bounds, book by slot.BookNext as bookings free up
//	roomread.go   what a booking reads of the room (its keys' heads, or
//	              the whole room for the resume function's look), and
//	              its choice by slot.BookNext
//	retry.go      Retry failed or cancelled jobs
//	redrive.go    Redrive the dead-letter queue
//	observe.go    Observer and its events, named as a job's history
//	              names them
//	wire.go       the records' converters to pkg/api's types (Queue,
//	              Stats, Schedule): what the admin function answers
//	trace.go      OpenTelemetry spans
package engine
