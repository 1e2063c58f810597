package admin_test

import (
	"testing"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/lambdafn/admin"
)

// TestRequestAPI holds Request.API to the fields of Request and
// api.AdminRequest: a user's field the function would refuse as unknown,
// or one it reads that the wire type lacks, fails here.
func TestRequestAPI(t *testing.T) { testenv.Converts(t, admin.Request.API) }
