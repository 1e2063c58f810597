package api_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// A request is plain JSON: durations travel as strings with their unit,
// and settings left zero are left out, for the stack's defaults.
func ExampleAdminRequest() {
	u := api.Config{Interval: 2 * time.Second, MaxRunning: 3}.Update()
	b, _ := json.Marshal(api.AdminRequest{Op: api.OpCreate, Queue: "emails", Config: &u})
	fmt.Println(string(b))

	var res api.AdminResponse
	_ = json.Unmarshal([]byte(`{"error":{"code":"queue_exists","field":"queue","message":"queue emails exists"}}`), &res)
	fmt.Println(res.Error.Code == api.CodeQueueExists, res.Error.Field)
	// Output:
	// {"op":"create","queue":"emails","config":{"interval":"2s","max_running":3}}
	// true queue
}
