package githubfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// description is GitHub's REST description (@octokit/openapi's
// api.github.com.json), read once per test binary: it is 13 MB, and every
// Server of the binary checks against the same one. The $ref form is read
// rather than the 73 MB dereferenced one: references resolve on the fly, and
// reading a fifth of the bytes is what makes the load cheap.
type description struct {
	root     map[string]any
	routes   *node
	ops      map[string]*operation // by operationId
	loadTime time.Duration
	patterns map[string]*regexp.Regexp // compiled once at load; read-only after
}

var loaded struct {
	once sync.Once
	desc *description
	err  error
}

func loadDescription(dir string) (*description, error) {
	loaded.once.Do(func() {
		loaded.desc, loaded.err = readDescription(filepath.Join(dir, "openapi", "generated", "api.github.com.json"))
	})
	return loaded.desc, loaded.err
}

// operation is one method+path of the description.
type operation struct {
	id       string
	method   string
	template string
	segments []string // the template split on "/", without the leading ""
	params   []map[string]any
	body     map[string]any // the application/json request schema; nil if none
	bodyReq  bool
	bodyJSON bool // false for the few operations taking raw bytes or text
	// responses by status code ("200", "201", ...).
	responses map[string]map[string]any
}

// node is a path-segment trie. Literal segments win over parameters, and
// single-segment parameters over multi-segment ones, so that
// /commits/{ref}/check-runs is not taken for /commits/{ref} with a ref of
// "x/check-runs".
type node struct {
	lit   map[string]*node
	param *node
	multi *node
	ops   map[string]*operation // by upper-case method
}

func readDescription(path string) (*description, error) {
	start := time.Now()
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("githubfake: read GitHub's REST description: %w", err)
	}
	d, err := parseDescription(raw, path)
	if err != nil {
		return nil, err
	}
	d.loadTime = time.Since(start)
	return d, nil
}

// parseDescription reads an OpenAPI document: GitHub's whole description,
// or the cut of it the fake serves from without one (offline.go).
func parseDescription(raw []byte, path string) (*description, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	// Numbers stay json.Number so integer and number are told apart, and
	// example IDs keep every digit.
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("githubfake: parse %s: %w", path, err)
	}
	d := &description{root: root, routes: &node{}, ops: map[string]*operation{}, patterns: map[string]*regexp.Regexp{}}
	paths, _ := root["paths"].(map[string]any)
	for tmpl, item := range paths {
		im, _ := item.(map[string]any)
		for method, o := range im {
			om, ok := o.(map[string]any)
			if !ok || method == "parameters" {
				continue
			}
			op := d.newOperation(strings.ToUpper(method), tmpl, om)
			d.ops[op.id] = op
			d.insert(op)
		}
	}
	d.compilePatterns(root)
	return d, nil
}

func (d *description) newOperation(method, tmpl string, om map[string]any) *operation {
	op := &operation{
		id: str(om["operationId"]), method: method, template: tmpl,
		segments: strings.Split(strings.TrimPrefix(tmpl, "/"), "/"), responses: map[string]map[string]any{},
	}
	for _, p := range list(om["parameters"]) {
		if pm := d.resolve(p); pm != nil {
			op.params = append(op.params, pm)
		}
	}
	if rb := d.resolve(om["requestBody"]); rb != nil {
		op.bodyReq, _ = rb["required"].(bool)
		content, _ := rb["content"].(map[string]any)
		if c, ok := content["application/json"].(map[string]any); ok {
			op.bodyJSON = true
			op.body = d.resolve(c["schema"])
		}
	}
	resps, _ := om["responses"].(map[string]any)
	for code, r := range resps {
		if rm := d.resolve(r); rm != nil {
			op.responses[code] = rm
		}
	}
	return op
}

func (d *description) insert(op *operation) {
	multi := map[string]bool{}
	for _, p := range op.params {
		if b, _ := p["x-multi-segment"].(bool); b && str(p["in"]) == "path" {
			multi[str(p["name"])] = true
		}
	}
	n := d.routes
	for _, seg := range op.segments {
		switch {
		case strings.HasPrefix(seg, "{") && multi[strings.Trim(seg, "{}")]:
			if n.multi == nil {
				n.multi = &node{}
			}
			n = n.multi
		case strings.HasPrefix(seg, "{"):
			if n.param == nil {
				n.param = &node{}
			}
			n = n.param
		default:
			if n.lit == nil {
				n.lit = map[string]*node{}
			}
			if n.lit[seg] == nil {
				n.lit[seg] = &node{}
			}
			n = n.lit[seg]
		}
	}
	if n.ops == nil {
		n.ops = map[string]*operation{}
	}
	n.ops[op.method] = op
}

// compilePatterns compiles every schema "pattern" up front so validation
// needs no lock; patterns Go's RE2 cannot compile (look-arounds) are left out.
func (d *description) compilePatterns(v any) {
	switch t := v.(type) {
	case map[string]any:
		if p, ok := t["pattern"].(string); ok {
			if _, done := d.patterns[p]; !done {
				re, err := regexp.Compile(p)
				if err != nil {
					re = nil
				}
				d.patterns[p] = re
			}
		}
		for k, c := range t {
			if k == "example" || k == "examples" {
				continue
			}
			d.compilePatterns(c)
		}
	case []any:
		for _, c := range t {
			d.compilePatterns(c)
		}
	}
}

// match finds the operation for method and the path's segments (still
// escaped, so an escaped "/" stays inside its segment). allowed lists the
// methods the path has when only the method is wrong.
func (d *description) match(method string, segs []string) (op *operation, params map[string]string, allowed []string) {
	var found *node
	var values []string
	var walk func(n *node, i int, acc []string) bool
	walk = func(n *node, i int, acc []string) bool {
		if i == len(segs) {
			if n.ops == nil {
				return false
			}
			if found == nil {
				found = n
			}
			if n.ops[method] != nil {
				found, values = n, acc
				return true
			}
			return false
		}
		if c := n.lit[segs[i]]; c != nil && walk(c, i+1, acc) {
			return true
		}
		if segs[i] != "" && n.param != nil && walk(n.param, i+1, append(acc[:len(acc):len(acc)], segs[i])) {
			return true
		}
		if n.multi != nil && segs[i] != "" {
			for j := i + 1; j <= len(segs); j++ {
				if walk(n.multi, j, append(acc[:len(acc):len(acc)], strings.Join(segs[i:j], "/"))) {
					return true
				}
			}
		}
		return false
	}
	if !walk(d.routes, 0, nil) {
		if found != nil {
			for m := range found.ops {
				allowed = append(allowed, m)
			}
			sort.Strings(allowed)
		}
		return nil, nil, allowed
	}
	op = found.ops[method]
	params = map[string]string{}
	k := 0
	for _, seg := range op.segments {
		if strings.HasPrefix(seg, "{") {
			v, err := url.PathUnescape(values[k])
			if err != nil {
				v = values[k]
			}
			params[strings.Trim(seg, "{}")] = v
			k++
		}
	}
	return op, params, nil
}

// resolve follows $ref pointers (all local, "#/components/...").
func (d *description) resolve(v any) map[string]any {
	m, _ := v.(map[string]any)
	for i := 0; m != nil && i < 32; i++ {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		var cur any = d.root
		for _, p := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cm, _ := cur.(map[string]any)
			cur = cm[strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")]
		}
		m, _ = cur.(map[string]any)
	}
	return m
}

// example returns the documented response of op for status: its schema and
// a deep copy of its example ("default" if there is one, else the first by
// name), or a nil example when none is documented.
func (d *description) example(op *operation, status string) (schema map[string]any, example any, ok bool) {
	r := op.responses[status]
	if r == nil {
		return nil, nil, false
	}
	content, _ := r["content"].(map[string]any)
	c, _ := content["application/json"].(map[string]any)
	if c == nil {
		return nil, nil, true
	}
	schema = d.resolve(c["schema"])
	if ex, has := c["example"]; has {
		return schema, deepCopy(ex), true
	}
	exs, _ := c["examples"].(map[string]any)
	names := make([]string, 0, len(exs))
	for n := range exs {
		names = append(names, n)
	}
	sort.Strings(names)
	if _, has := exs["default"]; has {
		names = append([]string{"default"}, names...)
	}
	if len(names) > 0 {
		if e := d.resolve(exs[names[0]]); e != nil {
			return schema, deepCopy(e["value"]), true
		}
	}
	return schema, nil, true
}

// successStatus is the status GitHub answers op with when it works: the
// lowest documented 2xx.
func (op *operation) successStatus() string {
	best := ""
	for code := range op.responses {
		if strings.HasPrefix(code, "2") && (best == "" || code < best) {
			best = code
		}
	}
	return best
}

func str(v any) string { s, _ := v.(string); return s }

func list(v any) []any { l, _ := v.([]any); return l }

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			out[k] = deepCopy(c)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, c := range t {
			out[i] = deepCopy(c)
		}
		return out
	}
	return v
}
