package kclmod

import (
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// quickstart is the kcl.mod `kusion init` writes for its quickstart stack.
const quickstart = testenv.KCLQuickstartMod

func TestParseQuickstart(t *testing.T) {
	m, err := Parse("kcl.mod", []byte(quickstart))
	if err != nil {
		t.Fatal(err)
	}
	if m.Package.Name != "quickstart" || m.Package.Version != "0.1.0" {
		t.Errorf("package = %+v", m.Package)
	}
	if len(m.Entries) != 1 || m.Entries[0] != "main.k" {
		t.Errorf("entries = %v", m.Entries)
	}
	want := map[string]struct {
		source string
		line   int
	}{
		"kam":     {"https://github.com/KusionStack/kam.git (tag 0.2.0)", 6},
		"service": {"oci://ghcr.io/kusionstack/service:0.1.0", 7},
		"network": {"oci://ghcr.io/kusionstack/network:0.2.0", 8},
	}
	if len(m.Dependencies) != len(want) {
		t.Fatalf("dependencies = %+v", m.Dependencies)
	}
	for _, d := range m.Dependencies {
		w, ok := want[d.Name]
		if !ok || d.Source() != w.source || d.Line != w.line {
			t.Errorf("dependency %s: source %q line %d, want %+v", d.Name, d.Source(), d.Line, w)
		}
	}
}

func TestParseDependencyForms(t *testing.T) {
	commit := strings.Repeat("a", 40)
	digest := "sha256:" + strings.Repeat("b", 64)
	tests := []struct {
		name, line string
		want       Dependency
	}{
		{"short form", `helloworld = "0.1.4"`, Dependency{Name: "helloworld", Package: "helloworld", Kind: KindOCI,
			OCI: OCISource{Registry: "ghcr.io", Repository: "kcl-lang/helloworld", Tag: "0.1.4"}}},
		{"path", `local = { path = "../lib" }`, Dependency{Name: "local", Package: "local", Kind: KindPath, Path: "../lib"}},
		{"git commit", `k = { git = "https://github.com/KusionStack/kam.git", commit = "` + commit + `" }`,
			Dependency{Name: "k", Package: "k", Kind: KindGit, Git: GitSource{URL: "https://github.com/KusionStack/kam.git", Commit: commit}}},
		{"git branch", `k = { git = "https://github.com/KusionStack/kam.git", branch = "main" }`,
			Dependency{Name: "k", Package: "k", Kind: KindGit, Git: GitSource{URL: "https://github.com/KusionStack/kam.git", Branch: "main"}}},
		{"oci digest", `s = { oci = "oci://ghcr.io/kusionstack/service", digest = "` + digest + `" }`,
			Dependency{Name: "s", Package: "s", Kind: KindOCI, OCI: OCISource{Registry: "ghcr.io", Repository: "kusionstack/service", Digest: digest}}},
		{"host-less repo", `h = { repo = "kcl-lang/helloworld", tag = "0.1.0" }`,
			Dependency{Name: "h", Package: "h", Kind: KindOCI, OCI: OCISource{Registry: "ghcr.io", Repository: "kcl-lang/helloworld", Tag: "0.1.0"}}},
		{"renamed", `alias = { oci = "oci://ghcr.io/kcl-lang/helloworld", tag = "0.1.0", package = "helloworld" }`,
			Dependency{Name: "alias", Package: "helloworld", Kind: KindOCI, OCI: OCISource{Registry: "ghcr.io", Repository: "kcl-lang/helloworld", Tag: "0.1.0"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse("kcl.mod", []byte("[dependencies]\n"+tt.line+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			got := m.Dependencies[0]
			tt.want.Line = 2
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, mod string
		want      []string
	}{
		{"syntax", "[package]\nname = \"x\"\n[dependencies]\nkam = { git = \n", []string{"kcl.mod:4:"}},
		{"two sources", "[dependencies]\n\nx = { git = \"https://a/b\", oci = \"oci://a/b\", tag = \"1\" }\n",
			[]string{"kcl.mod:3", `dependency "x"`, "exactly one of"}},
		{"two refs", "[dependencies]\nx = { git = \"https://a/b\", tag = \"1\", branch = \"main\" }\n",
			[]string{`dependency "x"`, "tag and branch"}},
		{"short commit", "[dependencies]\nx = { git = \"https://a/b\", commit = \"abc123\" }\n",
			[]string{`dependency "x"`, "full hexadecimal"}},
		{"oci without ref", "[dependencies]\nx = { oci = \"oci://ghcr.io/a/b\" }\n",
			[]string{`dependency "x"`, "tag or a digest"}},
		{"unknown key", "[dependencies]\nx = { oci = \"oci://ghcr.io/a/b\", tag = \"1\", insecure = \"true\" }\n",
			[]string{`dependency "x"`, `unknown key "insecure"`}},
		{"oci not a URL", "[dependencies]\nx = { oci = \"ghcr.io/a/b\", tag = \"1\" }\n",
			[]string{`dependency "x"`, "oci://"}},
		{"table form", "[dependencies.y]\ngit = \"https://a/b\"\ndigest = \"sha256:00\"\n",
			[]string{"kcl.mod:1", `dependency "y"`, `"digest" does not apply`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("kcl.mod", []byte(tt.mod))
			if err == nil {
				t.Fatal("parsed")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLockDescribes(t *testing.T) {
	lock := `[dependencies]
  [dependencies.kam]
    name = "kam"
    full_name = "kam_0.2.0"
    version = "0.2.0"
    sum = "sum1"
    url = "https://github.com/KusionStack/kam.git"
    git_tag = "0.2.0"
  [dependencies.service]
    name = "service"
    full_name = "service_0.1.0"
    version = "0.1.0"
    sum = "sum2"
    reg = "ghcr.io"
    repo = "kusionstack/service"
    oci_tag = "0.1.0"
`
	l, err := ParseLock("kcl.mod.lock", []byte(lock))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse("kcl.mod", []byte(quickstart))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Dependencies {
		e, ok := l.Dependencies[d.Name]
		want := d.Name != "network"
		if ok != want || (ok && !e.Describes(d)) {
			t.Errorf("%s: in lock %v, describes %v", d.Name, ok, ok && e.Describes(d))
		}
	}
	d := m.Dependencies[0]
	d.Git.Tag = "0.3.0"
	if l.Dependencies[d.Name].Describes(d) {
		t.Errorf("an entry for another tag describes %s", d.Source())
	}
}
