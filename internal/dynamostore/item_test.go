package dynamostore

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/job"
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

// A job's history goes into one compact attribute and comes back as it
// was, with the count of dropped events.
func TestJobHistoryItem(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	j := job.Job{Queue: "q", ID: "j", Status: job.Queued, Ticket: 9, Attempt: 2, EnqueuedAt: at}
	j.Record(job.Event{At: at, Kind: job.Enqueued, Ticket: 3})
	j.Record(job.Event{At: at.Add(time.Second), Kind: job.Started, Attempt: 1, LatenessMs: 4})
	j.Record(job.Event{At: at.Add(2 * time.Second), Kind: job.AttemptFailed, Attempt: 1, Error: "no"})
	j.Record(job.Event{At: at.Add(3 * time.Second), Kind: job.Retried, Attempt: 2, Ticket: 9})
	j.HistoryDropped = 4
	got, err := decodeJob(jobItem(j, "tok"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.History, j.History) || got.HistoryDropped != 4 {
		t.Errorf("history %+v (dropped %d), want %+v", got.History, got.HistoryDropped, j.History)
	}
}

// Every field of a job record survives its item: a field added to
// job.Job (api.Job) and not written or not read fails here, rather than
// being dropped silently on the way to DynamoDB.
func TestJobItemKeepsEveryField(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var j job.Job
	v := reflect.ValueOf(&j).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case f.Type() == reflect.TypeFor[time.Time]():
			f.Set(reflect.ValueOf(at.Add(time.Duration(i) * time.Second)))
		case f.Type() == reflect.TypeFor[job.Status]():
			f.SetString(string(job.Parked))
		case f.Type() == reflect.TypeFor[job.ParkReason]():
			f.SetString(string(job.WaitGate))
		case f.Type() == reflect.TypeFor[json.RawMessage]():
			f.SetBytes([]byte(`{"n":1}`))
		case f.Type() == reflect.TypeFor[[]job.Event]():
			f.Set(reflect.ValueOf([]job.Event{{At: at, Kind: job.Enqueued, Ticket: 3}}))
		case f.Kind() == reflect.String:
			f.SetString("v" + strconv.Itoa(i))
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.CanInt():
			f.SetInt(int64(i + 1))
		case v.Type().Field(i).Name == "Room":
			// Read when asked (the room's place), not stored.
		default:
			t.Fatalf("job.Job.%s: the test does not know how to fill a %s: teach it", v.Type().Field(i).Name, f.Type())
		}
	}
	j.Queue, j.ID = "q", "j"
	got, err := decodeJob(jobItem(j, "tok"))
	if err != nil {
		t.Fatal(err)
	}
	gv := reflect.ValueOf(got)
	for i := range v.NumField() {
		if want, have := v.Field(i).Interface(), gv.Field(i).Interface(); !reflect.DeepEqual(want, have) {
			t.Errorf("job.Job.%s: wrote %v, read %v", v.Type().Field(i).Name, want, have)
		}
	}
}
