package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const (
	image  = "ghcr.io/kusionpr/kusionpr"
	digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	pinned = "docker://" + image + "@" + digest
)

// decodeRuns reads runs as GitHub does, independently of ParseAction.
func decodeRuns(t *testing.T, src []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatalf("the result is not YAML: %v\n%s", err, src)
	}
	runs, ok := doc["runs"].(map[string]any)
	if !ok {
		t.Fatalf("the result has no runs mapping:\n%s", src)
	}
	return runs
}

// The repository's own action.yml, as a release rewrites it: the one line
// changes to the pinned image and every other byte stays.
func TestRewriteRepositoryAction(t *testing.T) {
	src, err := os.ReadFile("../../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, []byte("\n  image: Dockerfile\n")) {
		t.Fatalf("action.yml on the main branch should build from the Dockerfile (image: Dockerfile):\n%s", src)
	}
	got, err := Rewrite(src, image, digest)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Replace(src, []byte("\n  image: Dockerfile\n"), []byte("\n  image: "+pinned+"\n"), 1)
	if !bytes.Equal(got, want) {
		t.Errorf("rewritten action.yml differs from the original beyond runs.image:\n%s", got)
	}
	runs := decodeRuns(t, got)
	if runs["using"] != "docker" || runs["image"] != pinned {
		t.Errorf("runs = %v, want using docker and image %s", runs, pinned)
	}
	a, err := ParseAction(got)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name == "" || a.Runs.Using != "docker" || a.Runs.Image != pinned {
		t.Errorf("parsed action %+v", a)
	}
}

func TestRewriteKeepsEverythingElse(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{
			name: "plain with a comment, and image: elsewhere",
			src:  "name: x\ndescription: \"image: Dockerfile\"\ninputs:\n  image:\n    description: d\n    default: Dockerfile\nruns:\n  using: docker\n  image: Dockerfile # built by every job\n  args: [\"--a\", \"b\"]\n",
			want: "name: x\ndescription: \"image: Dockerfile\"\ninputs:\n  image:\n    description: d\n    default: Dockerfile\nruns:\n  using: docker\n  image: " + pinned + " # built by every job\n  args: [\"--a\", \"b\"]\n",
		},
		{
			name: "single-quoted, image before using",
			src:  "name: x\ndescription: y\nruns:\n  image: 'Dockerfile'\n  using: 'docker'\n",
			want: "name: x\ndescription: y\nruns:\n  image: '" + pinned + "'\n  using: 'docker'\n",
		},
		{
			name: "double-quoted, CRLF line ends",
			src:  "name: x\r\ndescription: y\r\nruns:\r\n  using: docker\r\n  image: \"Dockerfile\"\r\n  entrypoint: /usr/local/bin/action\r\n",
			want: "name: x\r\ndescription: y\r\nruns:\r\n  using: docker\r\n  image: \"" + pinned + "\"\r\n  entrypoint: /usr/local/bin/action\r\n",
		},
		{
			name: "already pinned, no final newline",
			src:  "name: x\ndescription: y\nruns: {using: docker, image: docker://ghcr.io/a/b@sha256:" + strings.Repeat("f", 64) + "}",
			want: "name: x\ndescription: y\nruns: {using: docker, image: " + pinned + "}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Rewrite([]byte(tt.src), image, digest)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
			if runs := decodeRuns(t, got); runs["using"] != "docker" || runs["image"] != pinned {
				t.Errorf("runs = %v", runs)
			}
		})
	}
}

func TestRewriteRefuses(t *testing.T) {
	const action = "name: x\ndescription: y\nruns:\n  using: docker\n  image: Dockerfile\n"
	tests := []struct {
		name, src, image, digest, errWant string
	}{
		{"short digest", action, image, "sha256:0123abcd", "digest"},
		{"digest with uppercase hex", action, image, "sha256:" + strings.Repeat("A", 64), "digest"},
		{"digest of another algorithm", action, image, "sha512:" + strings.Repeat("a", 128), "digest"},
		{"digest without algorithm", action, image, strings.Repeat("a", 64), "digest"},
		{"digest with a newline", action, image, digest + "\n", "digest"},
		{"no digest", action, image, "", "digest"},
		{"no image", action, "", digest, "image"},
		{"image with a tag", action, image + ":1.2.3", digest, "image"},
		{"image with a digest", action, image + "@" + digest, digest, "image"},
		{"image with uppercase", action, "ghcr.io/KusionPR/kusionpr", digest, "image"},
		{"image with a scheme", action, "docker://" + image, digest, "image"},
		{"image without a registry", action, "kusionpr/kusionpr", digest, "registry host"},
		{"registry alone", action, "ghcr.io", digest, "registry host"},
		{"image with a YAML line in it", action, image + "\n  entrypoint: /bin/sh", digest, "image"},
		{"image with a space", action, "ghcr.io/kusionpr/kusion pr", digest, "image"},
		{"empty path component", action, "ghcr.io//kusionpr", digest, "image"},
		{"a JavaScript action", "name: x\ndescription: y\nruns:\n  using: node24\n  main: index.js\n", image, digest, "not docker"},
		{"a composite action", "name: x\ndescription: y\nruns:\n  using: composite\n  steps: []\n", image, digest, "not docker"},
		{"no runs.image", "name: x\ndescription: y\nruns:\n  using: docker\n", image, digest, "missing"},
		{"no name", "description: y\nruns:\n  using: docker\n  image: Dockerfile\n", image, digest, "name"},
		{"image over two lines", "name: x\ndescription: y\nruns:\n  using: docker\n  image: Docker\n    file\n", image, digest, "image"},
		{"image as a block scalar", "name: x\ndescription: y\nruns:\n  using: docker\n  image: >-\n    Dockerfile\n", image, digest, "one-line"},
		{"image through an alias", "name: x\ndescription: &d y\nruns:\n  using: docker\n  image: *d\n", image, digest, "alias"},
		{"image with escapes", "name: x\ndescription: y\nruns:\n  using: docker\n  image: \"Docker\\x66ile\"\n", image, digest, "not written as"},
		{"two documents", action + "---\n" + action, image, digest, "one YAML document"},
		{"not YAML", "runs: [\n", image, digest, "YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Rewrite([]byte(tt.src), tt.image, tt.digest)
			if err == nil {
				t.Fatalf("accepted, wrote:\n%s", got)
			}
			if !strings.Contains(err.Error(), tt.errWant) {
				t.Errorf("error %q does not mention %q", err, tt.errWant)
			}
		})
	}
}

// The command as release.yml runs it: the file is rewritten in place, and
// a refused digest leaves it untouched.
func TestRunInPlace(t *testing.T) {
	const src = "name: x\ndescription: y\nruns:\n  using: docker\n  image: Dockerfile\n"
	path := filepath.Join(t.TempDir(), "action.yml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if err := run([]string{"-image", image, "-digest", "sha256:bad", "-o", path, path}, nil, &stdout); err == nil {
		t.Fatal("a bad digest was accepted")
	}
	if b, _ := os.ReadFile(path); string(b) != src {
		t.Fatalf("a refused rewrite changed the file:\n%s", b)
	}
	if err := run([]string{"-image", image, "-digest", digest, "-o", path, path}, nil, &stdout); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(src, "Dockerfile", pinned, 1); string(b) != want {
		t.Errorf("file holds\n%s\nwant\n%s", b, want)
	}
	if stdout.Len() != 0 {
		t.Errorf("with -o, standard output got %q", stdout.String())
	}
	// Without -o, standard input to standard output.
	stdout.Reset()
	if err := run([]string{"-image", image, "-digest", digest, "-"}, strings.NewReader(src), &stdout); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "  image: "+pinned+"\n") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
}
