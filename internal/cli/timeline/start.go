package timeline

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Start is one start of a job: which ticket of which queue began when, and
// who produced and ran it. The demo, the benchmarks and the console's
// timeline all read starts as it; the wire's is api.Start.
//
// In JSON it is one flat object with times in milliseconds since the
// epoch, each with microseconds, so a run can be scored from outside:
//
//	{"queue":"q","ticket":17,"job_id":"…","producer":"p3","worker":"w1","slot_at_ms":1732200000123.456,"gate_ms":1732200000123.456,"start_ms":1732200000123.712}
//
// gate_ms is left out when Gate is unknown.
type Start struct {
	Queue string
	// Key is the job's key, if it has one.
	Key string
	// Ticket and SlotAt are those the job started with (after any
	// re-ticket).
	Ticket int64
	SlotAt time.Time
	JobID  string
	// Attempt is the job's attempt that started (1 the first). The
	// JSON record leaves it out: the demo's starts are first attempts.
	Attempt int
	// Producer and Worker name who enqueued and who ran the job.
	Producer string
	Worker   string
	// At is when the job's handler began.
	At time.Time
	// Gate, if known, is the start the gate reserved for the attempt (the
	// job's StartedAt). At comes after it by the worker's wake-up.
	Gate time.Time
	// Retickets is how many times the job took a new ticket before it
	// started.
	Retickets int
}

// Lateness is how long after its slot the job began.
func (s Start) Lateness() time.Duration { return s.At.Sub(s.SlotAt) }

type wire struct {
	Queue    string      `json:"queue"`
	Key      string      `json:"key,omitempty"`
	Ticket   int64       `json:"ticket"`
	JobID    string      `json:"job_id"`
	Producer string      `json:"producer"`
	Worker   string      `json:"worker"`
	SlotAtMS json.Number `json:"slot_at_ms"`
	GateMS   json.Number `json:"gate_ms,omitempty"`
	StartMS  json.Number `json:"start_ms"`
	// Retickets is always written: 0 is a figure of its own.
	Retickets int `json:"retickets"`
}

// MarshalJSON writes the flat record shown on Start.
func (s Start) MarshalJSON() ([]byte, error) {
	w := wire{
		Queue: s.Queue, Key: s.Key, Ticket: s.Ticket, JobID: s.JobID, Producer: s.Producer, Worker: s.Worker,
		SlotAtMS: json.Number(formatMS(s.SlotAt)), StartMS: json.Number(formatMS(s.At)), Retickets: s.Retickets,
	}
	if !s.Gate.IsZero() {
		w.GateMS = json.Number(formatMS(s.Gate))
	}
	return json.Marshal(w)
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
	slotAt, err := parseMS(string(w.SlotAtMS))
	if err != nil {
		return fmt.Errorf("slot_at_ms: %w", err)
	}
	var gate time.Time
	if w.GateMS != "" {
		if gate, err = parseMS(string(w.GateMS)); err != nil {
			return fmt.Errorf("gate_ms: %w", err)
		}
	}
	*s = Start{
		Queue: w.Queue, Key: w.Key, Ticket: w.Ticket, JobID: w.JobID, Producer: w.Producer, Worker: w.Worker,
		SlotAt: slotAt, Gate: gate, At: at, Retickets: w.Retickets,
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
