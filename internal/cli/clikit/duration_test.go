package clikit

import (
	"testing"
	"time"
)

// Every table, text and page rounds a measured duration the same way.
func TestHuman(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0ms"},
		{412 * time.Microsecond, "0.4ms"},
		{-412 * time.Microsecond, "-0.4ms"},
		{2 * time.Millisecond, "2ms"},
		{4500 * time.Microsecond, "4.5ms"},
		{10*time.Millisecond + 250*time.Microsecond, "10ms"},
		{435*time.Millisecond + 200*time.Microsecond, "435ms"},
		{999*time.Millisecond + 600*time.Microsecond, "1s"},
		{1500 * time.Millisecond, "1.5s"},
		{9320 * time.Millisecond, "9.3s"},
		{125400 * time.Millisecond, "2m5s"},
		{15 * time.Minute, "15m"},
		{time.Hour + 2*time.Minute + 3*time.Second, "1h2m"},
		{time.Hour, "1h"},
		{26*time.Hour + 29*time.Second, "26h"},
	}
	for _, tt := range tests {
		if got := Human(tt.d); got != tt.want {
			t.Errorf("Human(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// A lateness carries its sign, but one that rounds to none reads 0ms.
func TestSigned(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{4 * time.Millisecond, "+4ms"},
		{4500 * time.Microsecond, "+4.5ms"},
		{-5 * time.Millisecond, "-5ms"},
		{0, "0ms"},
		{20 * time.Microsecond, "0ms"},
		{-20 * time.Microsecond, "0ms"},
	}
	for _, tt := range tests {
		if got := Signed(tt.d); got != tt.want {
			t.Errorf("Signed(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestSetting(t *testing.T) {
	for d, want := range map[time.Duration]string{15 * time.Minute: "15m", 90 * time.Minute: "1h30m", 2 * time.Millisecond: "2ms", time.Hour: "1h"} {
		if got := Setting(d); got != want {
			t.Errorf("Setting(%v) = %q, want %q", d, got, want)
		}
	}
}
