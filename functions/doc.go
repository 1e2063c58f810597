// Package functions holds slotq's four Lambda functions, one main package
// each: enqueue, worker, resume and admin. Its own tests check
// template.yaml against them (build targets, environment, event sources)
// and run their real bootstrap binaries end to end under the local
// Runtime API (pkg/lambdahost) against DynamoDB Local and moto_server's
// SQS.
package functions
