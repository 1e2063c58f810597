package input_test

import (
	"errors"
	"fmt"

	"github.com/slotq/slotq/internal/input"
)

// Decode refuses a key in another letter case and names where it stands.
func ExampleDecode() {
	var req struct {
		Queue string `json:"queue"`
		Job   struct {
			Kind string `json:"kind"`
		} `json:"job"`
	}
	err := input.Decode([]byte(`{"queue":"emails","job":{"KIND":"echo"}}`), &req)
	var ie *input.Error
	if errors.As(err, &ie) {
		fmt.Println(ie.Code, ie.Field)
	}
	// Output: unknown_field job.KIND
}
