// Package lambdafn is the wiring slotq's four Lambda functions share: the
// environment variables each one reads (Spec, Load), building the engine
// on DynamoDB and SQS from them (Config.Engine), the JSON logger, and the
// error object enqueue and admin answer bad input with (ErrorOf).
//
// The handlers themselves, event in and answer out, are its subpackages
// enqueue, worker, resume and admin: importable, so that the thin mains in
// functions/ and the local runtime (pkg/local) run the same code.
//
// Where it sits: functions/<name>/main.go calls Init and Engine once at
// init and starts the handler of internal/lambdafn/<name>, which calls
// ErrorOf. Nothing here decides
// anything about jobs: that is internal/engine's.
package lambdafn
