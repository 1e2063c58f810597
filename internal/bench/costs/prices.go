package costs

// Prices are the public per-unit prices the cost table uses: us-east-1,
// on-demand, list prices. This is the one place they are written.
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

var prices = Prices{
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

// Alternative is a managed scheduler's published price per million jobs.
type Alternative struct {
	Name, Unit string
	PerMillion float64
	Note       string
}

// alternatives are written with the same date as prices.
var alternatives = []Alternative{
	{"EventBridge Scheduler", "scheduled invocations", prices.SchedulerMillion,
		"one-time schedules; first 14 M/month free; no spacing between jobs"},
	{"Step Functions Standard", "state transitions", 25.00,
		"a Wait + Task workflow is ~3 transitions per job: ~$75 per million jobs, plus the task's own cost"},
	{"Google Cloud Tasks", "billable operations", 0.40,
		"first million per month free; rate limits per queue (max dispatches per second)"},
}
