package docs

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestYAMLBlocksParse: every ```yaml block of the pages is YAML a reader
// can paste: a workflow step, a manifest, a configuration file. (That a
// workflow shown is the example file it names, which actionlint checks, is
// deploy.TestReadmeWorkflowsAreTheExamples'.)
func TestYAMLBlocksParse(t *testing.T) {
	n := 0
	for _, p := range pages(t) {
		_, blocks := split(p.lines)
		for _, b := range blocks {
			if b.lang != "yaml" && b.lang != "yml" {
				continue
			}
			n++
			var v any
			if err := yaml.Unmarshal([]byte(strings.Join(b.lines, "\n")), &v); err != nil {
				t.Errorf("%s:%d: the yaml block does not parse: %v", p.name, b.first, err)
			}
		}
	}
	t.Logf("%d yaml blocks parsed", n)
	if n == 0 {
		t.Error("no yaml block found on any page: the block finder is broken")
	}
}

func TestSplitFindsBlocks(t *testing.T) {
	prose, blocks := split([]string{
		"text",
		"````yaml",
		"a: 1",
		"```",
		"~~~",
		"still the yaml block's: a fence closes on one at least as long",
		"````",
		"after",
		"~~~~sh",
		"x",
	})
	if len(blocks) != 2 {
		t.Fatalf("found %d blocks, want 2: %+v", len(blocks), blocks)
	}
	if b := blocks[0]; b.lang != "yaml" || b.first != 3 || len(b.lines) != 4 {
		t.Errorf("first block: %+v, want yaml from line 3, 4 lines", b)
	}
	if b := blocks[1]; b.lang != "sh" || b.first != 10 || len(b.lines) != 1 {
		t.Errorf("an unclosed block runs to the end: %+v", b)
	}
	if prose[0] != "text" || prose[7] != "after" || prose[2] != "" {
		t.Errorf("prose keeps the page's line numbers: %q", prose)
	}
}
