package yamlenc

import (
	"bytes"
	"encoding/json"
	"regexp"
	"runtime"
	"strings"
	"sync"

	goyaml "sigs.k8s.io/yaml/goyaml.v2"
)

// MarshalLists writes v as Marshal does, byte for byte, but the items of
// the lists at paths ("state.resources": a list under a key of an object
// under a key of v) one at a time, in parallel. The YAML encoder queues
// every event of a document until it ends, so a release of 10,000
// resources held hundreds of megabytes of them, most of an apply's peak
// memory, and took seconds of one core while the apply waited.
//
// Each part is encoded by the same encoder inside the same keys as in the
// whole document, so it lands at the same column (long strings fold at the
// same places), and the lines of those keys are cut off again. Where that
// cannot be sure (v is not an object of plain keys), Marshal encodes v.
func MarshalLists(v any, paths ...string) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return Marshal(v)
	}
	lists := map[string]map[string]bool{}
	for _, p := range paths {
		parent, key, ok := strings.Cut(p, ".")
		if !ok || !plainKey.MatchString(parent) || !plainKey.MatchString(key) {
			return Marshal(v)
		}
		if lists[parent] == nil {
			lists[parent] = map[string]bool{}
		}
		lists[parent][key] = true
	}
	var parts []part
	if !split(j, nil, lists, &parts) {
		return Marshal(v)
	}
	encodeParts(parts)
	var out bytes.Buffer
	for _, p := range parts {
		if p.err != nil {
			return nil, p.err
		}
		if !p.ok {
			return Marshal(v)
		}
		out.Write(p.text)
	}
	return out.Bytes(), nil
}

// plainKey is a key the encoder writes as it is, on a line of its own
// ("key:") when its value is a non-empty object or list.
var plainKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

// part is a piece of the document: text as it is, or a value to encode
// inside keys (the path from the top), whose first cut lines are dropped.
type part struct {
	text []byte
	keys []string
	raw  json.RawMessage
	// item: raw is one item of the list at keys.
	item bool
	cut  int
	ok   bool
	err  error
}

// split lays out the object j, found under keys, as parts; lists names the
// keys (under a key of the top object) whose lists go item by item. It is
// false when the layout cannot be sure of matching the whole encoding.
func split(j []byte, keys []string, lists map[string]map[string]bool, parts *[]part) bool {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(j, &obj); err != nil || obj == nil {
		return false
	}
	order, ok := keyOrder(obj)
	if !ok {
		return false
	}
	indent := strings.Repeat("  ", len(keys))
	for _, k := range order {
		raw := obj[k]
		path := append(append([]string(nil), keys...), k)
		switch {
		case len(keys) == 0 && lists[k] != nil && nonEmpty(raw, '{'):
			*parts = append(*parts, part{text: []byte(indent + k + ":\n"), ok: true})
			if !split(raw, path, lists, parts) {
				return false
			}
		case len(keys) == 1 && lists[keys[0]] != nil && lists[keys[0]][k] && nonEmpty(raw, '['):
			var items []json.RawMessage
			if err := json.Unmarshal(raw, &items); err != nil {
				return false
			}
			*parts = append(*parts, part{text: []byte(indent + k + ":\n"), ok: true})
			for _, it := range items {
				// Inside keys ... k: [item], cut the line of each key.
				*parts = append(*parts, part{keys: path, raw: it, item: true, cut: len(path)})
			}
		default:
			// Inside the keys above, {k: value}: cut the lines of those.
			*parts = append(*parts, part{keys: path, raw: raw, cut: len(keys)})
		}
	}
	return true
}

// nonEmpty says whether raw is a JSON object ('{') or list ('[') with
// something in it.
func nonEmpty(raw json.RawMessage, open byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 2 && t[0] == open
}

// keyOrder is the order the encoder writes obj's keys in, read from the
// encoder itself; false if a key is not plain.
func keyOrder(obj map[string]json.RawMessage) ([]string, bool) {
	m := make(map[any]any, len(obj))
	for k := range obj {
		if !plainKey.MatchString(k) {
			return nil, false
		}
		m[k] = nil
	}
	b, err := goyaml.Marshal(m)
	if err != nil {
		return nil, false
	}
	var order []string
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		k, ok := strings.CutSuffix(line, ": null")
		if _, known := obj[k]; !ok || !known {
			return nil, false
		}
		order = append(order, k)
	}
	return order, len(order) == len(obj)
}

// encodeParts encodes the parts that are values, as many at once as there
// are processors.
func encodeParts(parts []part) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				parts[i].encode()
			}
		}()
	}
	for i := range parts {
		if parts[i].text == nil {
			next <- i
		}
	}
	close(next)
	wg.Wait()
}

func (p *part) encode() {
	d := json.NewDecoder(bytes.NewReader(p.raw))
	// Numbers as written, as Marshal's way through JSON reads them.
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return
	}
	last := len(p.keys) - 1
	var doc any = map[string]any{p.keys[last]: v}
	if p.item {
		doc = map[string]any{p.keys[last]: []any{v}}
	}
	for i := last - 1; i >= 0; i-- {
		doc = map[string]any{p.keys[i]: doc}
	}
	b, err := Marshal(doc)
	if err != nil {
		p.err = err
		return
	}
	// The lines cut are the keys' own: "key:", indented by depth.
	for i := range p.cut {
		line, rest, found := bytes.Cut(b, []byte("\n"))
		if !found || string(line) != strings.Repeat("  ", i)+p.keys[i]+":" {
			return
		}
		b = rest
	}
	p.text, p.ok = b, true
}
