package apischema

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/slotq/slotq/pkg/api"
)

// schemaDir is docs/schema, from this package's folder.
const schemaDir = "../../../docs/schema"

// TestSchemaFiles holds docs/schema to what Generate writes: a change to
// pkg/api's wire types or to the functions' bounds must come with
// `make schema`.
func TestSchemaFiles(t *testing.T) {
	files, err := Generate("../../../pkg/api")
	if err != nil {
		t.Fatal(err)
	}
	on, err := filepath.Glob(filepath.Join(schemaDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range on {
		names = append(names, filepath.Base(p))
	}
	if want := slices.Sorted(maps.Keys(files)); !slices.Equal(names, want) {
		t.Errorf("docs/schema holds %v; Generate writes %v: run `make schema`", names, want)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(schemaDir, name))
		if err != nil {
			t.Errorf("%v: run `make schema`", err)
			continue
		}
		if string(got) != string(want) {
			t.Errorf("docs/schema/%s differs from what Generate writes: run `make schema`", name)
		}
	}
}

// TestConfigWire holds the schema's Config and Limit to what api.Config
// and api.Limit write: an update giving every setting writes exactly the
// schema's properties.
func TestConfigWire(t *testing.T) {
	var u api.ConfigUpdate
	v := reflect.ValueOf(&u).Elem()
	for i := range v.NumField() {
		v.Field(i).Set(reflect.New(v.Field(i).Type().Elem()))
	}
	b, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	var written map[string]json.RawMessage
	if err := json.Unmarshal(b, &written); err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(written)), jsonNames(configWire); !slices.Equal(got, want) {
		t.Errorf("api.ConfigUpdate writes %v; the schema's Config has %v", got, want)
	}
	b, err = json.Marshal(api.Limit{Interval: 1, Rate: api.Rate{N: 1, Per: 1}, Burst: 1, Window: api.Rate{N: 1, Per: 1}})
	if err != nil {
		t.Fatal(err)
	}
	written = nil
	if err := json.Unmarshal(b, &written); err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(written)), jsonNames(reflect.TypeFor[limitWire]()); !slices.Equal(got, want) {
		t.Errorf("api.Limit writes %v; the schema's Limit has %v", got, want)
	}
}

func jsonNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
