package dynamomodel

import (
	"context"
	"time"

	"github.com/slotq/slotq/internal/engine"
)

// The debounce items (engine.DebounceStore): one small item per queue
// and debounce key, in a partition of its own (D#<queue>), each call one
// read or one conditional write of it.

var _ engine.DebounceStore = (*Model)(nil)

// debounceSize is a debounce item's size without its payload.
const debounceSize = 150

func (m *Model) debounceCall(queue string, write bool) call {
	return call{part: "debounce#" + queue, item: "debounce", write: write}
}

func (m *Model) GetDebounce(ctx context.Context, queue, key string) (engine.Debounce, error) {
	return read(m, ctx, m.debounceCall(queue, false), func() (engine.Debounce, error) { return m.store.GetDebounce(ctx, queue, key) })
}

func (m *Model) OpenDebounce(ctx context.Context, d, prev engine.Debounce) error {
	return m.do(ctx, m.debounceCall(d.Queue, true), func() (int, error) { return 0, m.store.OpenDebounce(ctx, d, prev) },
		func() int { return debounceSize + len(d.Payload) })
}

func (m *Model) JoinDebounce(ctx context.Context, d engine.Debounce, now time.Time) (engine.Debounce, error) {
	var got engine.Debounce
	err := m.do(ctx, m.debounceCall(d.Queue, true), func() (int, error) {
		var err error
		got, err = m.store.JoinDebounce(ctx, d, now)
		return 0, err
	}, func() int { return debounceSize + len(d.Payload) })
	return got, err
}

func (m *Model) CloseDebounce(ctx context.Context, queue, key, jobID string, now time.Time) (engine.Debounce, error) {
	var got engine.Debounce
	err := m.do(ctx, m.debounceCall(queue, true), func() (int, error) {
		var err error
		got, err = m.store.CloseDebounce(ctx, queue, key, jobID, now)
		return 0, err
	}, func() int { return debounceSize + len(got.Payload) })
	return got, err
}

func (m *Model) DeleteDebounce(ctx context.Context, queue, key, jobID string) error {
	return m.do(ctx, m.debounceCall(queue, true), func() (int, error) { return 0, m.store.DeleteDebounce(ctx, queue, key, jobID) },
		func() int { return debounceSize })
}
