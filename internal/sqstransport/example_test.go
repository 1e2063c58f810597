package sqstransport_test

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/slotq/slotq/internal/sqstransport"
)

// A message received from the slot queue, turned into the record the
// Lambda event source would deliver to the worker function (slotq's local
// runtime does this in front of the worker).
func ExampleEventOf() {
	m := types.Message{
		MessageId:     aws.String("059f36b4-87a3-44ab-83d2-661975830a7d"),
		ReceiptHandle: aws.String("AQEB…"),
		Body:          aws.String(`{"v":1,"queue":"emails","job_id":"welcome-42","ticket":1,"slot_at":"2026-11-21T14:00:00Z","attempt":1,"kind":"echo"}`),
		Attributes:    map[string]string{"ApproximateReceiveCount": "1"},
	}
	ev := sqstransport.EventOf(m, "arn:aws:sqs:eu-west-1:123456789012:slotq-SlotQueue")
	fmt.Println(ev.MessageId, ev.EventSource, ev.AWSRegion, ev.Attributes["ApproximateReceiveCount"])
	// Output:
	// 059f36b4-87a3-44ab-83d2-661975830a7d aws:sqs eu-west-1 1
}
