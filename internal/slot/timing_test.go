package slot

import (
	"testing"
	"time"
)

func TestStartAt(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ms := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Millisecond))) }
	const lead, skew = 2 * time.Millisecond, 2 * time.Millisecond
	tests := []struct {
		name string
		now  time.Time
		want time.Time
	}{
		{"a lead ahead: the start wanted", ms(-2), ms(0)},
		{"just in time: the start wanted", ms(0), ms(0)},
		{"late within the skew: the last start on time", ms(0.5), ms(2)},
		{"late past the skew: a lead from now", ms(2.5), ms(4.5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StartAt(t0, tt.now, lead, skew); !got.Equal(tt.want) {
				t.Errorf("StartAt(%v) = %v, want %v", tt.now.Sub(t0), got.Sub(t0), tt.want.Sub(t0))
			}
		})
	}
	// With a lead shorter than the skew, a late worker that can still
	// make it asks for a lead from now.
	if got := StartAt(t0, ms(0.5), time.Millisecond, 3*time.Millisecond); !got.Equal(ms(1.5)) {
		t.Errorf("short lead: %v, want 1.5ms", got.Sub(t0))
	}
}

func TestMissedAndOverslept(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	iv, skew := time.Second, 10*time.Millisecond
	booked := State{Ticket: 5, Current: 2, Clock: t0.Add(3 * iv), LastStart: t0.Add(-iv)}
	last := State{Ticket: 3, Current: 2, Clock: t0, LastStart: t0.Add(-iv)}
	behind := State{Ticket: 5, Current: 2, Clock: t0.Add(3 * iv), LastStart: t0.Add(iv)} // the queue runs a second behind
	tests := []struct {
		name string
		s    State
		at   time.Time
		want bool
	}{
		{"on time", booked, t0, false},
		{"late within skew", booked, t0.Add(skew), false},
		{"late past skew, slots booked behind", booked, t0.Add(skew + time.Millisecond), true},
		{"late past skew, nothing booked behind", last, t0.Add(time.Minute), false},
		{"queue runs behind: due is its next start", behind, t0.Add(2 * iv), false},
		{"queue runs behind, late past it", behind, t0.Add(2*iv + skew + time.Millisecond), true},
		{"first start of a queue", State{Ticket: 3, Clock: t0.Add(2 * iv)}, t0.Add(skew + time.Millisecond), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Missed(tt.s, t0, tt.at, Every(iv), skew); got != tt.want {
				t.Errorf("Missed = %v, want %v (due %v)", got, tt.want, Due(tt.s, t0, Every(iv)).Sub(t0))
			}
		})
	}
	if w := Wake(skew); Overslept(t0, t0.Add(w), skew) || !Overslept(t0, t0.Add(w+1), skew) {
		t.Error("Overslept: a wake within Wake(skew) of the start is on time, one past it is not")
	}

}
