package functions_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tableSchema is a table's key and its global secondary indexes: each
// index's key schema and projection type, in words ("pk HASH", "ALL").
type tableSchema struct {
	Since   string
	Name    string
	Key     []string
	Indexes map[string][]string
}

// templateTable reads the table's schema from the transformed template.
func templateTable(t *testing.T) tableSchema {
	t.Helper()
	props := transform(t, filepath.Join(root, "template.yaml")).Resources["Table"].Properties
	keys := func(v any) []string {
		var out []string
		for _, k := range asList(v) {
			m := asMapAny(k)
			out = append(out, m["AttributeName"].(string)+" "+m["KeyType"].(string))
		}
		return out
	}
	s := tableSchema{Name: "template.yaml", Key: keys(props["KeySchema"]), Indexes: map[string][]string{}}
	for _, g := range asList(props["GlobalSecondaryIndexes"]) {
		m := asMapAny(g)
		proj, _ := asMapAny(m["Projection"])["ProjectionType"].(string)
		s.Indexes[m["IndexName"].(string)] = append(keys(m["KeySchema"]), proj)
	}
	return s
}

// indexChanges counts what CloudFormation must do to take a table from a
// to b: an index added or removed is one change, an index whose keys or
// projection changed is two (removed, then added again).
func indexChanges(a, b tableSchema) (n int, what []string) {
	for name, ka := range a.Indexes {
		kb, ok := b.Indexes[name]
		switch {
		case !ok:
			n, what = n+1, append(what, "removes "+name)
		case !slices.Equal(ka, kb):
			n, what = n+2, append(what, "changes "+name+" (remove and add)")
		}
	}
	for name := range b.Indexes {
		if _, ok := a.Indexes[name]; !ok {
			n, what = n+1, append(what, "adds "+name)
		}
	}
	slices.Sort(what)
	return n, what
}

// TestTableUpgrades: CloudFormation creates or deletes at most one global
// secondary index of a table per stack update, and a new table key would
// replace the table. Every upgrade from one schema epoch to the next, and
// from the last to template.yaml, changes at most one index and never
// the key; CHANGELOG.md names every epoch.
func TestTableUpgrades(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "table-releases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rel struct{ Epochs []tableSchema }
	if err := json.Unmarshal(b, &rel); err != nil {
		t.Fatal(err)
	}
	if len(rel.Epochs) == 0 {
		t.Fatal("no epoch in testdata/table-releases.json")
	}
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps := append(rel.Epochs, templateTable(t))
	for i := 1; i < len(steps); i++ {
		from, to := steps[i-1], steps[i]
		if !slices.Equal(from.Key, to.Key) {
			t.Errorf("from %q to %q: the table's key changes %v → %v: CloudFormation would replace the table", from.Name, to.Name, from.Key, to.Key)
		}
		if n, what := indexChanges(from, to); n > 1 {
			t.Errorf("from %q to %q: %d index changes in one update (%s); CloudFormation makes one per update: ship them in two releases",
				from.Name, to.Name, n, strings.Join(what, ", "))
		}
	}
	for _, e := range rel.Epochs {
		if !strings.Contains(string(changelog), e.Since) {
			t.Errorf("CHANGELOG.md does not name the epoch %q (%s)", e.Name, e.Since)
		}
	}
}

// indexChanges itself: what the upgrade test counts.
func TestIndexChanges(t *testing.T) {
	base := tableSchema{Indexes: map[string][]string{"a": {"x HASH", "ALL"}, "b": {"y HASH", "ALL"}}}
	for _, tc := range []struct {
		name string
		to   map[string][]string
		want int
	}{
		{"same", map[string][]string{"a": {"x HASH", "ALL"}, "b": {"y HASH", "ALL"}}, 0},
		{"one added", map[string][]string{"a": {"x HASH", "ALL"}, "b": {"y HASH", "ALL"}, "c": {"z HASH", "ALL"}}, 1},
		{"one removed", map[string][]string{"a": {"x HASH", "ALL"}}, 1},
		{"two added", map[string][]string{"a": {"x HASH", "ALL"}, "b": {"y HASH", "ALL"}, "c": {"z HASH", "ALL"}, "d": {"w HASH", "ALL"}}, 2},
		{"projection changed", map[string][]string{"a": {"x HASH", "KEYS_ONLY"}, "b": {"y HASH", "ALL"}}, 2},
		{"renamed", map[string][]string{"a": {"x HASH", "ALL"}, "c": {"y HASH", "ALL"}}, 2},
	} {
		if n, what := indexChanges(base, tableSchema{Indexes: tc.to}); n != tc.want {
			t.Errorf("%s: %d changes (%v), want %d", tc.name, n, what, tc.want)
		}
	}
}
