package clikit

import (
	"strconv"
	"strings"
	"time"
)

// Human rounds a measured duration for people, as every table, text and
// page of slotq prints one: 412µs "0.4ms", 4.5ms "4.5ms", 435.2ms
// "435ms", 9.32s "9.3s", 125.4s "2m5s", 3723s "1h2m", 3600s "1h". JSON keeps the
// exact value.
func Human(d time.Duration) string {
	if d < 0 {
		return "-" + Human(-d)
	}
	switch {
	case d < 10*time.Millisecond:
		return decimal(float64(d)/float64(time.Millisecond)) + "ms"
	case d.Round(time.Millisecond) < time.Second:
		return strconv.FormatInt(d.Round(time.Millisecond).Milliseconds(), 10) + "ms"
	case d.Round(100*time.Millisecond) < time.Minute:
		return decimal(d.Seconds()) + "s"
	case d.Round(time.Second) < time.Hour:
		return Setting(d.Round(time.Second))
	}
	return Setting(d.Round(time.Minute))
}

// Signed is Human with the sign of a lateness: "+4.5ms" late, "-5ms"
// early, "0ms" for what rounds to none.
func Signed(d time.Duration) string {
	switch h := Human(d); {
	case h == "0ms" || h == "-0ms":
		return "0ms"
	case d < 0:
		return h
	default:
		return "+" + h
	}
}

// decimal writes x with one decimal, none if it is zero: 9.3, 10.
func decimal(x float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(x, 'f', 1, 64), ".0")
}

// Setting prints a duration someone set, such as a queue's interval,
// exactly, without the zero parts Go's String adds: "15m" (not "15m0s"),
// "1h30m", "2ms".
func Setting(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
