// Package pricelist is the public per-unit AWS prices slotq's cost
// figures use: us-east-1, on-demand, list prices, written in one place.
// internal/bench/costs prices what it measures with them, and the
// precision model (internal/bench/precision) a worker's batches; a leaf,
// so that the model links none of the measurement's adapters.
package pricelist

// Prices are the public per-unit prices: us-east-1, on-demand, list
// prices.
type Prices struct {
	Date   string
	Source string
	// DynamoDB on-demand, per million request units.
	DynamoWriteMillion, DynamoReadMillion float64
	// SQS standard queue, per million requests (each 64 KiB chunk of a
	// payload is one request).
	SQSMillion float64
	// Lambda on arm64: per million requests and per GB-second.
	LambdaMillion, LambdaGBSecond float64
	// CloudWatch: a standard-resolution alarm per metric it reads, and a
	// dashboard beyond an account's first three, per month.
	AlarmMetricMonth, DashboardMonth float64
	// EventBridge Scheduler, per million scheduled invocations (the
	// resume function's schedule).
	SchedulerMillion float64
}

// List is the prices, with the date they were written down.
var List = Prices{
	Date: "list prices in effect since 2024-11-01 (DynamoDB on-demand cut), written down 2026-11-21 " +
		"and not re-checked against the pricing pages since",
	Source: "aws.amazon.com/dynamodb/pricing/on-demand, aws.amazon.com/sqs/pricing, " +
		"aws.amazon.com/lambda/pricing, aws.amazon.com/cloudwatch/pricing, aws.amazon.com/eventbridge/pricing " +
		"(us-east-1, first pricing tier, free tiers ignored)",
	DynamoWriteMillion: 0.625,
	DynamoReadMillion:  0.125,
	SQSMillion:         0.40,
	LambdaMillion:      0.20,
	LambdaGBSecond:     0.0000133334,
	AlarmMetricMonth:   0.10,
	DashboardMonth:     3.00,
	SchedulerMillion:   1.00,
}
