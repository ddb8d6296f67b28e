package workflow

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/kusionpr/kusionpr/engine/project"
)

// ChangedFile is one file a change touches, its path relative to the
// repository root, with GitHub's status (added, modified, removed, renamed).
type ChangedFile struct {
	Path, Status, PreviousPath string
}

// AffectedStack is a stack a change touches.
type AffectedStack struct {
	// Dir is the stack folder, relative to the repository root, slash-separated.
	Dir string
	// Deleted: its stack.yaml was removed, so what it deployed is to be destroyed.
	Deleted bool
}

// Selection says which changes count beyond a stack's own folder.
type Selection struct {
	// Shared are globs (** for any depth) of files every stack uses: a
	// change to one affects all stacks.
	Shared []string
	// Stacks, if set, are globs a stack folder must match to be considered
	// (the operator's, from the action's stacks input).
	Stacks []string
	// Dirs, if set, are the stack folders to consider, named literally:
	// "apps/*" is the folder of that name, not every folder in apps. A
	// command's arguments are given here, never as globs.
	Dirs []string
}

// AffectedStacks maps changed files to the stacks they touch, looking at the
// repository checked out at root: a file inside a stack folder (the nearest
// folder holding stack.yaml) touches that stack; a file of a project outside
// its stacks (project.yaml, workspace files, shared modules) touches every
// stack of the project; a workspace file above the projects
// (workspaces/<name>.yaml, which stacks below find by walking up) touches
// every stack below its folder; a file matching a Shared glob touches every
// stack. A removed stack.yaml is a deleted stack.
func AffectedStacks(root string, files []ChangedFile, sel Selection) ([]AffectedStack, error) {
	stacks, projects, err := scan(root)
	if err != nil {
		return nil, err
	}
	shared, err := compileGlobs(sel.Shared)
	if err != nil {
		return nil, err
	}
	only, err := compileGlobs(sel.Stacks)
	if err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, d := range sel.Dirs {
		named[d] = true
	}
	found := map[string]AffectedStack{}
	add := func(dir string, deleted bool) {
		if len(only) > 0 && !matchAny(only, dir) {
			return
		}
		if len(sel.Dirs) > 0 && !named[dir] {
			return
		}
		found[dir] = AffectedStack{Dir: dir, Deleted: deleted}
	}
	under := func(dir string) {
		for _, s := range stacks {
			if dir == "." || s == dir || strings.HasPrefix(s, dir+"/") {
				add(s, false)
			}
		}
	}
	// Stacks whose stack.yaml this change removes: the files that went with
	// them belong to them, not to their project.
	var deleted []string
	for _, f := range files {
		for _, p := range []string{f.Path, f.PreviousPath} {
			p = path.Clean(strings.TrimPrefix(p, "/"))
			if path.Base(p) == project.StackFile && (f.Status == "removed" || p == f.PreviousPath) && !contains(stacks, path.Dir(p)) {
				deleted = append(deleted, path.Dir(p))
			}
		}
	}
	for _, f := range files {
		for _, p := range []string{f.Path, f.PreviousPath} {
			if p == "" {
				continue
			}
			p = path.Clean(strings.TrimPrefix(p, "/"))
			if matchAny(shared, p) {
				under(".")
				continue
			}
			if d := nearest(deleted, p); d != "" {
				add(d, true)
				continue
			}
			if s := nearest(stacks, p); s != "" {
				add(s, false)
			} else if pr := nearest(projects, p); pr != "" {
				under(pr)
			} else if dir := path.Dir(p); path.Base(dir) == project.WorkspacesDir {
				under(path.Dir(dir))
			}
		}
	}
	out := make([]AffectedStack, 0, len(found))
	for _, s := range found {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out, nil
}

// scan lists the stack and project folders under root.
func scan(root string) (stacks, projects []string, err error) {
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		switch d.Name() {
		case project.StackFile:
			stacks = append(stacks, filepath.ToSlash(rel))
		case project.ProjectFile:
			projects = append(projects, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("find stacks in %s: %w", root, err)
	}
	return stacks, projects, nil
}

// nearest returns the deepest folder of dirs that holds p, "" if none.
func nearest(dirs []string, p string) string {
	best := ""
	for _, d := range dirs {
		if (d == "." || strings.HasPrefix(p, d+"/")) && len(d) > len(best) {
			best = d
		}
	}
	return best
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// compileGlobs turns globs into expressions: * and ? stay within one path
// segment, ** spans any number of them.
func compileGlobs(globs []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, g := range globs {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		var b strings.Builder
		b.WriteString("^")
		for i := 0; i < len(g); i++ {
			switch c := g[i]; {
			case c == '*' && i+1 < len(g) && g[i+1] == '*':
				i++
				if i+1 < len(g) && g[i+1] == '/' {
					i++
					b.WriteString("(?:.*/)?")
				} else {
					b.WriteString(".*")
				}
			case c == '*':
				b.WriteString("[^/]*")
			case c == '?':
				b.WriteString("[^/]")
			default:
				b.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		b.WriteString("$")
		re, err := regexp.Compile(b.String())
		if err != nil {
			return nil, fmt.Errorf("glob %q: %w", g, err)
		}
		out = append(out, re)
	}
	return out, nil
}

func matchAny(res []*regexp.Regexp, p string) bool {
	for _, re := range res {
		if re.MatchString(p) {
			return true
		}
	}
	return false
}
