// Package lambdafn is the wiring slotq's four Lambda functions share: the
// environment variables each one reads (Spec, Load), building the engine
// on DynamoDB and SQS from them (Config.Engine), the JSON logger, and the
// error object enqueue and admin answer bad input with (ErrorOf).
//
// Where it sits: functions/<name>/main.go calls Load and Engine once at
// init; functions/<name>/handler.go calls ErrorOf. Nothing here decides
// anything about jobs: that is pkg/engine's.
package lambdafn
