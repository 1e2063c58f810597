package main

import (
	"strconv"
	"strings"
	"time"
)

// human rounds a measured duration for people, as every table and text
// output of slotq prints one: 412µs "0.4ms", 435.2ms "435ms", 9.32s
// "9.3s", 125.4s "2m5s", 3723s "1h2m". JSON keeps the exact value.
func human(d time.Duration) string {
	if d < 0 {
		return "-" + human(-d)
	}
	switch {
	case d < 10*time.Millisecond:
		return decimal(float64(d)/float64(time.Millisecond)) + "ms"
	case d.Round(time.Millisecond) < time.Second:
		return strconv.FormatInt(d.Round(time.Millisecond).Milliseconds(), 10) + "ms"
	case d.Round(100*time.Millisecond) < time.Minute:
		return decimal(d.Seconds()) + "s"
	case d.Round(time.Second) < time.Hour:
		return shortDuration(d.Round(time.Second))
	}
	return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
}

// signed is human with a sign: "+4ms" late, "-5ms" early.
func signed(d time.Duration) string {
	if d < 0 {
		return human(d)
	}
	return "+" + human(d)
}

// decimal writes x with one decimal, none if it is zero: 9.3, 10.
func decimal(x float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(x, 'f', 1, 64), ".0")
}

// setting prints a duration someone set, such as a queue's interval,
// exactly: "15m", "1h30m", "2ms", not rounded.
func setting(d time.Duration) string { return shortDuration(d) }

// shortDuration prints d without the zero parts Go's String adds ("15m",
// not "15m0s").
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
