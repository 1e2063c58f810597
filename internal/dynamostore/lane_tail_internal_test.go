package dynamostore

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/slot"
)

// TestTailMarkRefused: the waiting string of a lane with a tail is one
// that earlier releases' decoding (decodeWaiting, unchanged since) refuses,
// so that they never write such a lane back without its tail; this
// release reads it.
func TestTailMarkRefused(t *testing.T) {
	var ws []slot.Waiter
	for i := range 20 {
		ws = append(ws, slot.Waiter{Ticket: int64(i + 1), JobID: fmt.Sprintf("%s-%d", strings.Repeat("j", 100), i)})
	}
	for _, inline := range []int{0, 2} {
		p := planTail(ws, tail{}, 7)
		if p.next.epoch == 0 {
			t.Fatalf("20 waiters of 100-character ids kept no tail: %d inline", len(p.inline))
		}
		enc, err := encodeWaiting(ws[:inline])
		if err != nil {
			t.Fatal(err)
		}
		stored := tailMark + enc
		if _, err := decodeWaiting(stored); err == nil {
			t.Errorf("%d inline: an earlier release reads %q without an error", inline, stored)
		}
		l, err := decodeLane(map[string]types.AttributeValue{attrPK: str("L#q"), attrSK: str("K#k"), attrWaiting: str(stored)})
		if err != nil || !slices.Equal(l.Waiting, ws[:inline]) {
			t.Errorf("%d inline: decodeLane = %v, %v; want the inline waiters", inline, l.Waiting, err)
		}
	}
}
