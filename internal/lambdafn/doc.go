// Package lambdafn is the wiring slotq's four Lambda functions share: the
// environment variables each one reads (Spec, Load, Init), the JSON
// logger (Logger), building the engine on DynamoDB and SQS from them
// (Config.Engine) and the other clients a function needs (DeadLetters,
// Recorder, Activity, Starts), and the error object enqueue and admin
// answer bad input with (ErrorOf).
//
// The handlers themselves, event in and answer out, are its subpackages,
// one per function: lambdafn/enqueue, lambdafn/worker, lambdafn/resume
// and lambdafn/admin. They are importable, so that the thin mains in
// functions/ and the local runtime (pkg/local) run the same code.
//
// Where it sits: functions/enqueue, functions/resume and functions/admin
// call Init and Config.Engine once at init and start the handler of
// internal/lambdafn/<name>; functions/worker calls pkg/worker.Start,
// which does the same for lambdafn/worker with the user's Go handlers
// (a target.Mux) as the engine's Runner (internal/dispatch). Nothing here
// decides anything about jobs: that is internal/engine's.
//
// Like every runtime package of slotq it sits at the top of internal/:
// engine, slot, job, attempt, dispatch, dynamostore, memstore,
// sqstransport, metrics, startlog and lambdafn/{admin,enqueue,resume,worker}
// are what the functions link. What only builds, tests and measures slotq
// is under internal/dev (emulators, SAM tooling, cost meters, test rigs),
// and what the slotq command serves people under internal/cli (console,
// timeline); nothing here imports either.
package lambdafn
