package clock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestSleep(t *testing.T) {
	tests := []struct {
		name    string
		d       time.Duration
		cancel  time.Duration // cancel the context after this long; 0: never
		want    error
		elapsed time.Duration
	}{
		{name: "whole wait", d: time.Hour, want: nil, elapsed: time.Hour},
		{name: "cancelled midway", d: time.Hour, cancel: time.Minute, want: context.Canceled, elapsed: time.Minute},
		{name: "no wait", d: 0, want: nil, elapsed: 0},
		{name: "negative", d: -time.Second, want: nil, elapsed: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tt.cancel > 0 {
					time.AfterFunc(tt.cancel, cancel)
				}
				start := time.Now()
				err := Sleep(ctx, tt.d)
				if !errors.Is(err, tt.want) {
					t.Errorf("Sleep: %v, want %v", err, tt.want)
				}
				if got := time.Since(start); got != tt.elapsed {
					t.Errorf("slept %v, want %v", got, tt.elapsed)
				}
			})
		})
	}
}

// A loop that sleeps between tries stops once its context has ended, even
// when the next wait is zero.
func TestSleepDoneContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, d := range []time.Duration{0, time.Hour} {
		if err := Sleep(ctx, d); !errors.Is(err, context.Canceled) {
			t.Errorf("Sleep(%v) on a done context: %v", d, err)
		}
	}
}
