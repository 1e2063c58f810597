package lambdafn_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
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

// TestWireTypes holds pkg/api, the types users decode the functions'
// answers into and encode their requests with, to the JSON of the types
// the functions use: the same field names, each of the same shape, so
// that no answer's field is lost to a user and no request field of a
// user is refused as unknown.
func TestWireTypes(t *testing.T) {
	for _, p := range []struct{ server, wire any }{
		{admin.Request{}, api.AdminRequest{}},
		{admin.Response{}, api.AdminResponse{}},
		{enqueue.Response{}, api.EnqueueResponse{}},
		{job.EnqueueRequest{}, api.EnqueueRequest{}},
		{job.Spec{}, api.Spec{}},
		{job.Job{}, api.Job{}},
		{engine.Queue{}, api.Queue{}},
		{slot.State{}, api.QueueState{}},
		{engine.Stats{}, api.Stats{}},
		{metrics.Activity{}, api.Activity{}},
		{engine.EnqueueResult{}, api.EnqueueResult{}},
		{engine.RetryResult{}, api.RetryResult{}},
		{engine.KeyInfo{}, api.KeyInfo{}},
		{admin.KeyLimit{}, api.KeyLimit{}},
	} {
		s, w := shape(reflect.TypeOf(p.server)), shape(reflect.TypeOf(p.wire))
		if s != w {
			t.Errorf("%T and %T differ on the wire:\n server %s\n wire   %s", p.server, p.wire, s, w)
		}
	}
	// slot.Config and job.Job are defined by api.Config and api.Job (one
	// declaration of each field); Config travels by api's MarshalJSON.
	// lambdafn.Error is api.Error.
	_ = slot.Config(api.Config{})
	var _ *api.Error = (*lambdafn.Error)(nil)
	// The bounds the wire states are the server's.
	if api.MaxKeyOverrides != slot.MaxKeyOverrides {
		t.Errorf("api.MaxKeyOverrides %d, slot.MaxKeyOverrides %d", api.MaxKeyOverrides, slot.MaxKeyOverrides)
	}
}

var marshaler = reflect.TypeFor[json.Marshaler]()

// shape is t's JSON form: object fields by name, each with its shape.
func shape(t reflect.Type) string {
	if t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) {
		return "json"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return shape(t.Elem())
	case reflect.Slice:
		return "[]" + shape(t.Elem())
	case reflect.Map:
		return "map[" + shape(t.Key()) + "]" + shape(t.Elem())
	case reflect.Struct:
		var fields []string
		for f := range t.Fields() {
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fields = append(fields, name+":"+shape(f.Type))
		}
		sort.Strings(fields)
		return "{" + strings.Join(fields, " ") + "}"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "int"
	}
	return t.Kind().String()
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
