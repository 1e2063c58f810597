package timeline

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Start is one start of a job: which ticket of which queue began when, and
// who produced and ran it.
//
// In JSON it is one flat object with times in milliseconds since the epoch:
//
//	{"queue":"q","ticket":17,"job_id":"…","producer":"p3","worker":"w1","slot_at_ms":1732200000123,"start_ms":1732200000124.37}
//
// slot_at_ms is whole milliseconds (rounded down, so start_ms − slot_at_ms
// never understates lateness); start_ms carries microseconds.
type Start struct {
	Queue string
	// Ticket and SlotAt are those the job started with (after any
	// re-ticket).
	Ticket int64
	SlotAt time.Time
	JobID  string
	// Producer and Worker name who enqueued and who ran the job.
	Producer string
	Worker   string
	// At is when the job's handler began.
	At time.Time
	// Gate, if known, is when the gate let the attempt start (the job's
	// StartedAt): the time slotq's spacing guarantee is about. At comes
	// after it by however long the worker took to reach the handler. It is
	// not part of the JSON record.
	Gate time.Time
}

// Lateness is how long after its slot the job began.
func (s Start) Lateness() time.Duration { return s.At.Sub(s.SlotAt) }

type wire struct {
	Queue    string      `json:"queue"`
	Ticket   int64       `json:"ticket"`
	JobID    string      `json:"job_id"`
	Producer string      `json:"producer"`
	Worker   string      `json:"worker"`
	SlotAtMS int64       `json:"slot_at_ms"`
	StartMS  json.Number `json:"start_ms"`
}

// MarshalJSON writes the flat record shown on Start.
func (s Start) MarshalJSON() ([]byte, error) {
	return json.Marshal(wire{
		Queue: s.Queue, Ticket: s.Ticket, JobID: s.JobID, Producer: s.Producer, Worker: s.Worker,
		SlotAtMS: s.SlotAt.UnixMilli(), StartMS: json.Number(formatMS(s.At)),
	})
}

// UnmarshalJSON reads the flat record shown on Start.
func (s *Start) UnmarshalJSON(b []byte) error {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	at, err := parseMS(string(w.StartMS))
	if err != nil {
		return fmt.Errorf("start_ms: %w", err)
	}
	*s = Start{
		Queue: w.Queue, Ticket: w.Ticket, JobID: w.JobID, Producer: w.Producer, Worker: w.Worker,
		SlotAt: time.UnixMilli(w.SlotAtMS).UTC(), At: at,
	}
	return nil
}

// formatMS writes t as milliseconds since the epoch with three decimals.
func formatMS(t time.Time) string {
	us := t.UnixMicro()
	sign := ""
	if us < 0 {
		sign, us = "-", -us
	}
	return fmt.Sprintf("%s%d.%03d", sign, us/1000, us%1000)
}

// parseMS reads a decimal number of milliseconds since the epoch exactly,
// to the nanosecond, without going through float64.
func parseMS(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, fmt.Errorf("missing")
	}
	neg := strings.HasPrefix(s, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	if strings.ContainsAny(whole+frac, "eE+-") {
		// Exponent notation: rare, and float64 is precise enough for it.
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return time.Time{}, err
		}
		return time.Unix(0, int64(f*1e6)).UTC(), nil
	}
	ms, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	frac = (frac + "000000")[:6]
	ns, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	total := ms*1e6 + ns
	if neg {
		total = -total
	}
	return time.Unix(0, total).UTC(), nil
}
