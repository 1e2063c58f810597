package dynamostore

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestMillis(t *testing.T) {
	tests := []struct {
		ns   int64
		want string
	}{
		{0, "0"},
		{1, "0.000001"},
		{1_500_000, "1.5"},
		{time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).UnixNano(), "1767268800000"},
		{time.Date(2026, 1, 1, 12, 0, 0, 123456789, time.UTC).UnixNano(), "1767268800123.456789"},
		{-2_000_500_000, "-2000.5"},
	}
	for _, tt := range tests {
		got := msNum(tt.ns).(*types.AttributeValueMemberN).Value
		if got != tt.want {
			t.Errorf("msNum(%d) = %s, want %s", tt.ns, got, tt.want)
		}
		back, err := parseMs(got)
		if err != nil || back != tt.ns {
			t.Errorf("parseMs(%s) = %d, %v; want %d", got, back, err, tt.ns)
		}
	}
	// Notations DynamoDB (or an emulator) may answer with.
	for s, want := range map[string]int64{"1.7E+3": 1_700_000_000, "2.50": 2_500_000, "-0.5": -500_000} {
		if got, err := parseMs(s); err != nil || got != want {
			t.Errorf("parseMs(%s) = %d, %v; want %d", s, got, err, want)
		}
	}
	if _, err := parseMs("x"); err == nil {
		t.Error("parseMs(x): no error")
	}
}

func TestTTLRoundsUp(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC)
	if got, want := ttlSeconds(at), at.Unix()+1; got != want {
		t.Errorf("ttlSeconds = %d, want %d", got, want)
	}
	if got, want := ttlSeconds(at.Truncate(time.Second)), at.Unix(); got != want {
		t.Errorf("ttlSeconds(whole second) = %d, want %d", got, want)
	}
}
