package main

import (
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

func TestRoomLine(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		r    api.RoomPlace
		want string
	}{
		{api.RoomPlace{Place: 3212, Key: "A", Priority: 3, EstimatedStartAt: now.Add(48 * time.Second)}, "3,212th of key A (priority 3); about 48s"},
		{api.RoomPlace{Place: 1, Priority: 1, EstimatedStartAt: now.Add(-time.Second)}, "1st of the jobs without a key (priority 1); about 0ms"},
		{api.RoomPlace{Place: 22, Key: "b", Priority: 5, EstimatedStartAt: now.Add(1500 * time.Millisecond)}, "22nd of key b (priority 5); about 1.5s"},
		{api.RoomPlace{Place: 113, Key: "c", Priority: 2, EstimatedStartAt: now.Add(time.Second)}, "113th of key c (priority 2); about 1s"},
		{api.RoomPlace{Place: 1000003, Key: "d", Priority: 4, EstimatedStartAt: now.Add(time.Second)}, "1,000,003rd of key d (priority 4); about 1s"},
	} {
		if got := roomLine(c.r, now); got != c.want {
			t.Errorf("roomLine(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
}
