package lambdafn_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/lambdafn"
	"github.com/slotq/slotq/internal/lambdafn/admin"
	"github.com/slotq/slotq/internal/lambdafn/enqueue"
	"github.com/slotq/slotq/internal/metrics"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// TestWireTypes holds the functions' types to pkg/api's, the types users
// decode the answers into and encode their requests with. Each is one of
// three: the api type itself (an alias: the answers, and what the
// engine answers with alike); a type defined by it, which adds strict
// decoding or methods and declares no field of its own (the conversions
// below compile only while the fields are the same); or a server record
// that keeps more than the wire shows, answered through its one
// converter, whose test walks both types' fields (engine.Queue.API,
// slot.State.API, schedule.Spec.API and schedule.SpecOf,
// job.EnqueueRequest.API, admin.Request.API).
func TestWireTypes(t *testing.T) {
	var (
		_ api.AdminResponse   = admin.Response{}
		_ api.EnqueueResponse = enqueue.Response{}
		_ api.EnqueueResult   = engine.EnqueueResult{}
		_ api.Accepted        = engine.Accepted{}
		_ api.RetryResult     = engine.RetryResult{}
		_ api.KeyInfo         = engine.KeyInfo{}
		_ api.KeyLimit        = engine.KeyLimit{}
		_ api.LaneFigures     = engine.LaneFigures{}
		_ api.Activity        = metrics.Activity{}
		_ api.Reslot          = engine.Reslot{}
		_ api.Stats           = engine.Stats{}
		_ api.Schedule        = engine.Schedule{}
		_ *api.Error          = (*lambdafn.Error)(nil)
	)
	_ = slot.Config(api.Config{})
	_ = job.Spec(api.Spec{})
	_ = job.Job(api.Job{})
	_ = admin.KeyLimit(api.KeyLimit{})
	_ = engine.ResumeReport(api.ResumeReport{})
	// The bounds the wire states are the server's.
	if api.MaxKeyOverrides != slot.MaxKeyOverrides {
		t.Errorf("api.MaxKeyOverrides %d, slot.MaxKeyOverrides %d", api.MaxKeyOverrides, slot.MaxKeyOverrides)
	}
}

// TestErrorCodes checks that every error code slotq's code can answer
// with is one of pkg/api's Code constants, so the codes users branch on
// are listed in one place.
func TestErrorCodes(t *testing.T) {
	known := map[string]bool{}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join("..", "..", "pkg", "api", "error.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && strings.HasPrefix(vs.Names[0].Name, "Code") {
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
				v, _ := strconv.Unquote(lit.Value)
				known[v] = true
			}
		}
		return true
	})
	if len(known) < 40 {
		t.Fatalf("read %d codes from pkg/api/error.go", len(known))
	}
	code := regexp.MustCompile(`(?:Invalid\(|Code:\s*)"([a-z_]+)"`)
	var missing []string
	for _, dir := range []string{"..", filepath.Join("..", "..", "pkg")} {
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range code.FindAllStringSubmatch(string(b), -1) {
				if !known[m[1]] && !slices.Contains(missing, m[1]) {
					missing = append(missing, m[1]+" ("+path+")")
				}
			}
			return nil
		})
	}
	if len(missing) > 0 {
		t.Errorf("codes answered but not in pkg/api's Code constants: %v", missing)
	}
}
