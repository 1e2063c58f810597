package sqstransport

import (
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// EventOf converts a message received from the queue of arn into the
// events.SQSMessage the Lambda SQS event source would deliver, for an
// event source emulated outside Lambda (internal/local/esm).
func EventOf(m types.Message, arn string) events.SQSMessage {
	region := ""
	if parts := strings.SplitN(arn, ":", 6); len(parts) == 6 {
		region = parts[3]
	}
	return toEvent(m, arn, region)
}
