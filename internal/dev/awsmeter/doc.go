// Package awsmeter counts what slotq's AWS adapters ask of AWS. DynamoDB
// and SQS wrap the SDK clients that internal/dynamostore and internal/sqstransport
// take (they satisfy dynamostore.DynamoDBAPI and sqstransport.SQSAPI) and
// count the calls that pass through them: DynamoDB requests and failed
// conditions by operation, SQS requests and the messages they carried.
//
// The cost benchmark (internal/bench/costs, `slotq costs`) and the adapters' tests wrap the
// client they pass in; production passes the SDK client itself, so the
// adapters carry no counters. The wrappers sit above the SDK client, so
// they count what the adapter asked for: a request the SDK's retryer sends
// again counts once.
//
// Request units are not counted here: an emulator's ConsumedCapacity is not
// DynamoDB's, so internal/bench/awssim.Billed works them out from the items.
package awsmeter
