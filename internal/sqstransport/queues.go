package sqstransport

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// MaxReceiveCount is how many times CreateQueues lets a message be received
// before SQS moves it to the dead-letter queue. The worker records a job's
// own retries and dead letter; this catches messages that crash the worker
// again and again.
const MaxReceiveCount = 5

// CreateQueues creates the slot queue called name, with the given
// visibility timeout (whole seconds, at least 1s), and its dead-letter queue
// name+"-dlq", and links them with a redrive policy. It returns both URLs.
// Like CreateQueue, it succeeds if the queues exist with the same
// attributes. The template creates these queues in AWS; CreateQueues is for
// tests and the local runtime.
func CreateQueues(ctx context.Context, api SQSAPI, name string, visibilityTimeout time.Duration) (queueURL, dlqURL string, err error) {
	vis := int64(visibilityTimeout / time.Second)
	if vis < 1 || vis > 12*60*60 {
		return "", "", fmt.Errorf("create queues %s: visibility timeout %v must lie between 1s and 12h", name, visibilityTimeout)
	}
	dlq, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String(name + "-dlq"),
		Attributes: map[string]string{
			string(types.QueueAttributeNameMessageRetentionPeriod): strconv.Itoa(14 * 24 * 60 * 60),
		},
	})
	if err != nil {
		return "", "", fmt.Errorf("create queue %s-dlq: %w", name, err)
	}
	dlqURL = aws.ToString(dlq.QueueUrl)
	attrs, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       dlq.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", "", convert("get dead-letter queue arn", dlqURL, err)
	}
	policy, err := json.Marshal(map[string]string{
		"deadLetterTargetArn": attrs.Attributes[string(types.QueueAttributeNameQueueArn)],
		"maxReceiveCount":     strconv.Itoa(MaxReceiveCount),
	})
	if err != nil {
		return "", "", fmt.Errorf("create queue %s: %w", name, err)
	}
	q, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String(name),
		Attributes: map[string]string{
			string(types.QueueAttributeNameVisibilityTimeout): strconv.FormatInt(vis, 10),
			string(types.QueueAttributeNameRedrivePolicy):     string(policy),
		},
	})
	if err != nil {
		return "", "", fmt.Errorf("create queue %s: %w", name, err)
	}
	return aws.ToString(q.QueueUrl), dlqURL, nil
}
