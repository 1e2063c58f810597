// Package functions holds slotq's four Lambda functions, one main package
// each: enqueue, worker, resume and admin. Its own tests check
// template.yaml against them (build targets, environment, event sources,
// alarms), read the template as CloudFormation gets it from the SAM
// translator (two stacks in one account; each role held to the SDK calls
// linked into its function), check the stack examples/acme writes, and
// run the real bootstrap binaries end to end under the local Runtime API
// (internal/local/lambdahost) against DynamoDB Local and moto_server's SQS.
package functions
