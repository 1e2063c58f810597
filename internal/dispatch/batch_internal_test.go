package dispatch

import (
	"errors"
	"testing"

	"github.com/slotq/slotq/internal/attempt"
)

// Whatever a batch target answers, each of the n jobs gets exactly one
// outcome, or the answer is refused whole: never a panic, never an
// outcome for a job the batch does not hold, and a slow-down's wait
// within a day.
func FuzzBatchAnswers(f *testing.F) {
	for _, s := range []string{
		`[{"status":"succeeded","result":{"id":1}},{"status":"slow_down","retry_after":"2s"}]`,
		`[{"status":"failed","error":"x","skip_retry":true},{"status":"slow_down","retry_after":1e300}]`,
		`[{"status":"slow_down","retry_after":"-5s"},{"status":"slow_down","retry_after":"retry after 1m"}]`,
		`{"results":[]}`, `[null,null]`, `[1,2]`, ``,
	} {
		f.Add([]byte(s), uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		as, err := answers(data, int(n))
		if err != nil {
			return
		}
		errs, res := perJob(as, "fuzz")
		if len(errs) != int(n) || len(res) != int(n) {
			t.Fatalf("%d answers gave %d outcomes and %d results", n, len(errs), len(res))
		}
		for _, err := range errs {
			var ra *attempt.RetryAfterError
			if errors.As(err, &ra) && (ra.Wait < 0 || ra.Wait > maxRetryAfter) {
				t.Fatalf("a slow-down of %v", ra.Wait)
			}
		}
	})
}
