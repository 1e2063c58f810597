package schedule_test

import (
	"testing"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/schedule"
)

// TestSpecAPI holds Spec.API to the fields of Spec and api.ScheduleSpec.
func TestSpecAPI(t *testing.T) { testenv.Converts(t, schedule.Spec.API) }

// TestSpecOf holds SpecOf, the way back, to the same fields.
func TestSpecOf(t *testing.T) { testenv.Converts(t, schedule.SpecOf) }
