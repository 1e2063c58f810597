package dynamostore

import (
	"context"
	"errors"

	"github.com/slotq/slotq/pkg/slot"
)

var errLanesUnsupported = errors.New("dynamostore: lanes not supported yet")

// GetLane is not supported yet.
func (s *Store) GetLane(context.Context, string, string) (slot.Lane, error) {
	return slot.Lane{}, errLanesUnsupported
}

// PutLane is not supported yet.
func (s *Store) PutLane(context.Context, slot.Lane, int64) (slot.Lane, error) {
	return slot.Lane{}, errLanesUnsupported
}

// AddPending is not supported yet.
func (s *Store) AddPending(context.Context, string, int64, string, int64) (slot.Lane, error) {
	return slot.Lane{}, errLanesUnsupported
}

// ListLanes is not supported yet.
func (s *Store) ListLanes(context.Context, string) ([]slot.Lane, error) {
	return nil, errLanesUnsupported
}
