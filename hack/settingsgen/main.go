// Command settingsgen writes what the settings' declarations
// (settings/table.go) say: docs/settings.md, and the inputs: section of
// action.yml. With -check it writes nothing and fails, naming the file,
// when one is not what the declarations say (settings.TestGenerated
// checks the same under go test).
//
//	go run ./hack/settingsgen [-root DIR] [-check]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kusionpr/kusionpr/settings"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	check := flag.Bool("check", false, "write nothing; fail when a file differs from the declarations")
	flag.Parse()
	if err := run(*root, *check); err != nil {
		fmt.Fprintf(os.Stderr, "settingsgen: %v\n", err)
		os.Exit(1)
	}
}

func run(root string, check bool) error {
	actionPath := filepath.Join(root, "action.yml")
	action, err := os.ReadFile(actionPath)
	if err != nil {
		return err
	}
	spliced, err := settings.SpliceInputs(action)
	if err != nil {
		return fmt.Errorf("%s: %w", actionPath, err)
	}
	files := []struct {
		path string
		data []byte
	}{
		{actionPath, spliced},
		{filepath.Join(root, "docs", "settings.md"), []byte(settings.Markdown())},
	}
	var stale []string
	for _, f := range files {
		old, err := os.ReadFile(f.path)
		if err == nil && bytes.Equal(old, f.data) {
			continue
		}
		if check {
			stale = append(stale, f.path)
			continue
		}
		if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
			return err
		}
		fmt.Printf("wrote %s\n", f.path)
	}
	if len(stale) > 0 {
		return fmt.Errorf("not what settings/table.go declares (run make settings): %v", stale)
	}
	return nil
}
