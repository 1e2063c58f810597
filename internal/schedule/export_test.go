package schedule

import "github.com/slotq/slotq/internal/job"

func validJobID(id string) error {
	if err := job.ValidateID(id); err != nil {
		return err
	}
	return nil
}
