package sqstransport

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// ErrQueueMissing means the SQS queue does not exist. Errors wrapping it
// name the queue URL.
var ErrQueueMissing = errors.New("sqs queue does not exist")

// TooLargeError reports an envelope that does not fit in one SQS message.
type TooLargeError struct {
	Queue string
	JobID string
	// Size is the message size in bytes, body and attributes.
	Size int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("job %s/%s: message is %d bytes; SQS takes at most %d", e.Queue, e.JobID, e.Size, MaxMessageSize)
}

// EntryError is SQS's answer for one entry of a batch it did not accept.
type EntryError struct {
	Code    string
	Message string
	// SenderFault is true when SQS blames the request; such entries are
	// not retried.
	SenderFault bool
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("sqs: %s: %s", e.Code, e.Message)
}

func isQueueMissing(err error) bool {
	var missing *types.QueueDoesNotExist
	if errors.As(err, &missing) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue":
			return true
		}
	}
	return false
}
