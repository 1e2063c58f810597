// Package lambdahost runs Lambda functions' bootstrap binaries locally, the
// way `sam local invoke` and `sam local start-lambda` do, without Docker.
//
// For each function it serves the Lambda Runtime API
// (/2018-06-01/runtime/invocation/next, /{id}/response, /{id}/error and
// /init/error) on its own loopback port and starts the function's bootstrap
// process with AWS_LAMBDA_RUNTIME_API pointing there and the function's
// environment. In front of all functions it serves the Lambda Invoke API
// (POST /2015-03-31/functions/{name}/invocations), so callers use the
// ordinary AWS SDK or CLI with AWS_ENDPOINT_URL_LAMBDA set to Host.URL.
//
// Each execution environment (a bootstrap process) runs one invocation at
// a time, as in Lambda; a function has Function.Concurrency of them
// (default 1), and further invocations wait for a free one. InvokeAPI is
// the one implementation of the Invoke API's wire format, served in front
// of the bootstraps (Host) and of Go handlers run in process (Handlers,
// which pkg/local uses). A function
// that exceeds its timeout is killed and started again on the next
// invocation; its invocation answers with a function error, as in Lambda.
//
// Where it sits: internal/local/samrun (`slotq sam invoke`, `make invoke`) and the end-to-end tests
// of functions/ run the real bootstrap binaries under it against moto.
package lambdahost
