// Command releaseaction rewrites action.yml for a release: runs.image, which
// on the main branch is `Dockerfile` (every job builds the image), becomes
// the published image by digest, `docker://REGISTRY/PATH@sha256:HEX`, so a
// workflow that uses the release pulls that very image and builds nothing.
//
//	releaseaction -image ghcr.io/owner/repo -digest sha256:HEX [-o FILE] [action.yml]
//
// It reads action.yml (default ./action.yml, - for standard input) and
// writes the result to FILE (default standard output; FILE may be the input).
// Only the value of runs.image changes: every other byte of the file, its
// comments, quoting and order, stays as it was. It refuses a digest that is
// not sha256: and 64 lowercase hexadecimal digits, an image name that is not
// a registry host and a repository path without tag or digest, and a file
// that is not a docker action or whose runs.image it cannot replace exactly;
// it then writes nothing and exits 1.
//
// The release workflow (.github/workflows/release.yml) runs it with the
// digest docker/build-push-action reports for the pushed image.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "releaseaction:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("releaseaction", flag.ContinueOnError)
	image := fs.String("image", "", "the image's name: registry host and repository, no tag (ghcr.io/owner/repo)")
	digest := fs.String("digest", "", "the image's digest as the registry reports it (sha256:HEX)")
	out := fs.String("o", "", "write the result to this file instead of standard output")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("one action.yml at most, got %q", fs.Args())
	}
	in := "action.yml"
	if fs.NArg() == 1 {
		in = fs.Arg(0)
	}
	var src []byte
	var err error
	if in == "-" {
		src, err = io.ReadAll(stdin)
	} else {
		src, err = os.ReadFile(in)
	}
	if err != nil {
		return fmt.Errorf("reading the action: %w", err)
	}
	res, err := Rewrite(src, *image, *digest)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if *out == "" {
		_, err = stdout.Write(res)
		return err
	}
	return writeFile(*out, res)
}

// writeFile replaces path with data whole (a temporary file renamed over
// it), so a failed write never leaves half an action.yml.
func writeFile(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".action-*.yml")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

var (
	// OCI image spec, descriptor digests: sha256's encoded part is 64
	// lowercase hexadecimal digits.
	digestRE = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
	// The grammar of github.com/distribution/reference, lowercase only: a
	// domain (host names with dots, or localhost, with an optional port),
	// then one or more path components. GitHub's registry takes lowercase
	// names only; a tag or digest has no place here.
	hostRE      = regexp.MustCompile(`^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*(?::[0-9]+)?$`)
	componentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$`)
)

// ValidateDigest refuses anything but sha256: and 64 lowercase hex digits.
func ValidateDigest(d string) error {
	if !digestRE.MatchString(d) {
		return fmt.Errorf("digest %q is not sha256: followed by 64 lowercase hexadecimal digits", d)
	}
	return nil
}

// ValidateImage refuses a name that is not REGISTRY/PATH. The registry
// must be named (a host with a dot or a port, or localhost): without one,
// docker would take the first path component for a Docker Hub user.
func ValidateImage(name string) error {
	if name == "" {
		return errors.New("no image name (-image ghcr.io/owner/repo)")
	}
	if len(name) > 255 {
		return fmt.Errorf("image name %.40q... is longer than 255 characters", name)
	}
	parts := strings.Split(name, "/")
	host := parts[0]
	if len(parts) < 2 || !hostRE.MatchString(host) || !(strings.ContainsAny(host, ".:") || host == "localhost") {
		return fmt.Errorf("image name %q does not start with a registry host (ghcr.io/owner/repo)", name)
	}
	for _, c := range parts[1:] {
		if !componentRE.MatchString(c) {
			return fmt.Errorf("image name %q: %q is not a repository path component (lowercase letters and digits, separated by '.', '_', '__' or '-'; no tag or digest)", name, c)
		}
	}
	return nil
}

// Action is what GitHub reads of a docker action's metadata, enough to
// check that a rewritten file still is one.
type Action struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Runs        struct {
		Using      string            `yaml:"using"`
		Image      string            `yaml:"image"`
		Entrypoint string            `yaml:"entrypoint"`
		Args       []string          `yaml:"args"`
		Env        map[string]string `yaml:"env"`
	} `yaml:"runs"`
}

// ParseAction decodes action metadata and checks it is a docker action
// with an image: name, description, runs.using docker and runs.image.
func ParseAction(src []byte) (Action, error) {
	var a Action
	if err := yaml.Unmarshal(src, &a); err != nil {
		return a, fmt.Errorf("not YAML action metadata: %w", err)
	}
	switch {
	case a.Name == "" || a.Description == "":
		return a, errors.New("action metadata needs a name and a description")
	case a.Runs.Using != "docker":
		return a, fmt.Errorf("runs.using is %q, not docker: only a docker action has an image", a.Runs.Using)
	case a.Runs.Image == "":
		return a, errors.New("runs.image is missing")
	}
	return a, nil
}

// Rewrite returns src with runs.image set to docker://image@digest and
// every other byte unchanged.
func Rewrite(src []byte, image, digest string) ([]byte, error) {
	if err := ValidateImage(image); err != nil {
		return nil, err
	}
	if err := ValidateDigest(digest); err != nil {
		return nil, err
	}
	if _, err := ParseAction(src); err != nil {
		return nil, err
	}
	node, err := imageNode(src)
	if err != nil {
		return nil, err
	}
	start, end, err := span(src, node)
	if err != nil {
		return nil, err
	}
	want := "docker://" + image + "@" + digest
	// The value keeps the quoting it had; want holds no quote or
	// backslash, so each form writes it as is.
	var repl string
	switch node.Style {
	case yaml.SingleQuotedStyle:
		repl = "'" + want + "'"
	case yaml.DoubleQuotedStyle:
		repl = `"` + want + `"`
	default:
		repl = want
	}
	res := make([]byte, 0, len(src)+len(repl))
	res = append(res, src[:start]...)
	res = append(res, repl...)
	res = append(res, src[end:]...)

	// The result must say what was meant and nothing else: a docker
	// action naming the image, the rest of the document as it was.
	got, err := ParseAction(res)
	if err != nil {
		return nil, fmt.Errorf("the rewritten action does not parse: %w", err)
	}
	if got.Runs.Image != want {
		return nil, fmt.Errorf("the rewritten action's runs.image reads %q, not %q", got.Runs.Image, want)
	}
	var before, after map[string]any
	if err := yaml.Unmarshal(src, &before); err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(res, &after); err != nil {
		return nil, err
	}
	runs, ok := before["runs"].(map[string]any)
	if !ok {
		return nil, errors.New("runs is not a mapping")
	}
	runs["image"] = want
	if !reflect.DeepEqual(before, after) {
		return nil, errors.New("rewriting runs.image changed more than runs.image")
	}
	return res, nil
}

// imageNode finds the scalar value of runs.image in the one document src
// holds.
func imageNode(src []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("action metadata is one YAML document; this file holds more")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, errors.New("not a YAML mapping")
	}
	runs := value(doc.Content[0], "runs")
	if runs == nil || runs.Kind != yaml.MappingNode {
		return nil, errors.New("runs is not a mapping")
	}
	img := value(runs, "image")
	if img == nil || img.Kind != yaml.ScalarNode {
		return nil, errors.New("runs.image is not a plain value (an alias, a list or a mapping)")
	}
	return img, nil
}

// value returns the value of key in mapping m, or nil.
func value(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// span returns where the scalar n is written in src, as byte offsets. It
// works out the text a single-line scalar of n's style and value must be,
// and checks src holds exactly that at n's position; anything else (a
// value over several lines, escapes, a tag, a block scalar) is refused
// rather than guessed at.
func span(src []byte, n *yaml.Node) (start, end int, err error) {
	var text string
	switch n.Style {
	case 0:
		text = n.Value
	case yaml.SingleQuotedStyle:
		text = "'" + strings.ReplaceAll(n.Value, "'", "''") + "'"
	case yaml.DoubleQuotedStyle:
		if strings.ContainsAny(n.Value, "\"\\") {
			return 0, 0, fmt.Errorf("line %d: runs.image %q is written with escapes; write it plainly", n.Line, n.Value)
		}
		text = `"` + n.Value + `"`
	default:
		return 0, 0, fmt.Errorf("line %d: runs.image is not a one-line value; write it as image: Dockerfile", n.Line)
	}
	if strings.ContainsAny(text, "\r\n") {
		return 0, 0, fmt.Errorf("line %d: runs.image spans several lines", n.Line)
	}
	// The line's first byte, then the value's: yaml.v3 counts columns
	// in characters.
	line := 1
	for i := 0; i < len(src) && line < n.Line; i++ {
		if src[i] == '\n' {
			line++
			start = i + 1
		}
	}
	for col := 1; col < n.Column; col++ {
		if start >= len(src) || src[start] == '\n' {
			return 0, 0, fmt.Errorf("line %d: runs.image is not where the parser put it", n.Line)
		}
		_, size := utf8.DecodeRune(src[start:])
		start += size
	}
	if !bytes.HasPrefix(src[start:], []byte(text)) {
		return 0, 0, fmt.Errorf("line %d: runs.image is not written as %s; write it as image: Dockerfile", n.Line, text)
	}
	// Rewrite parses the result again: a value that went on past text
	// would show there.
	end = start + len(text)
	return start, end, nil
}
