// Command apischema writes the JSON Schemas of the enqueue and admin
// functions' requests and answers (package apischema) into a folder:
// `make schema` runs it from the repository's root.
//
//	go run ./internal/dev/apischema/cmd/apischema docs/schema
package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/slotq/slotq/internal/dev/apischema"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: apischema DIR (run from the repository's root)")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "apischema:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	files, err := apischema.Generate("pkg/api")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", filepath.Join(dir, name))
	}
	return nil
}
