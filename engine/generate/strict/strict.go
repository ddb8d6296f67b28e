// Package strict decodes YAML into Go structs the way a reviewer wants it
// checked: a field the struct does not know, a key given twice, or a value of
// the wrong kind is an error that names the field by its path
// (web.accessories.db.ports[0].port) and, for a file, its line. The
// AppConfiguration, workspaces and every built-in module decode through it,
// so a typo anywhere reads the same.
//
// Structs are described by their json tags (name, omitempty, and "-"), as
// for encoding/json. A field of type any or *yaml.Node takes the value as
// written; a type implementing json.Unmarshaler is handed the value as JSON.
// A string field takes any scalar as its source text, so version: 8.0 is
// "8.0", not "8".
//
// A mapping may carry _type, the KCL schema it is an instance of, as
// Kusion's KCL compiles every schema instance (network.Port,
// service.container.Container): a struct without a _type field of its own
// takes any string there and ignores it, as Kusion's modules do. The
// compiler has checked the instance against its schema already.
package strict

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// SchemaTypeKey is where compiled KCL names a mapping's schema.
const SchemaTypeKey = "_type"

// Error is one problem at one place of a document.
type Error struct {
	// Path is where, as a.b[0].c; empty for the document itself.
	Path string
	// Line is the 1-based line in the document, 0 if unknown.
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Unmarshal decodes the YAML document in data into out (a pointer). Every
// problem found is reported, joined, in document order.
func Unmarshal(data []byte, out any) error {
	node, err := Parse(data)
	if err != nil {
		return err
	}
	return Decode(node, "", out)
}

// Parse reads one YAML document into its node tree, so that later decoding
// can name lines. An empty document is a null node.
func Parse(data []byte) (node *yaml.Node, err error) {
	// yaml.v3 is fed pull request content; a panic in it must be an error.
	defer func() {
		if r := recover(); r != nil {
			node, err = nil, fmt.Errorf("YAML decoder panicked: %v", r)
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: ""}, nil
	}
	return doc.Content[0], nil
}

// Decode fills out (a pointer) from node. prefix is prepended to every path,
// so that a part of a larger document reports its place in the whole.
func Decode(node *yaml.Node, prefix string, out any) error {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("strict.Decode: out must be a non-nil pointer, got %T", out)
	}
	d := &decoder{}
	d.value(node, prefix, rv.Elem())
	if len(d.errs) == 0 {
		return nil
	}
	sort.SliceStable(d.errs, func(i, j int) bool { return d.errs[i].Line < d.errs[j].Line })
	errs := make([]error, len(d.errs))
	for i, e := range d.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// Errors lists the *Error values inside err (as Decode joins them).
func Errors(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if e, ok := err.(*Error); ok {
			out = append(out, e)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		out = append(out, &Error{Msg: err.Error()})
	}
	walk(err)
	return out
}

type decoder struct {
	errs []*Error
}

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	d.errs = append(d.errs, &Error{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)})
}

var (
	nodeType        = reflect.TypeOf(yaml.Node{})
	unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
)

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

func (d *decoder) value(n *yaml.Node, path string, v reflect.Value) {
	n = resolve(n)
	t := v.Type()
	switch {
	case t == nodeType:
		if n != nil {
			v.Set(reflect.ValueOf(*n))
		}
		return
	case t.Kind() == reflect.Pointer && t.Elem() == nodeType:
		if n != nil {
			v.Set(reflect.ValueOf(n))
		}
		return
	}
	if isNull(n) {
		// null leaves a field as it is, as encoding/json does.
		return
	}
	if t.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.value(n, path, v.Elem())
		return
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		d.unmarshaler(n, path, v)
		return
	}
	switch t.Kind() {
	case reflect.Interface:
		if t.NumMethod() != 0 {
			d.fail(n, path, "cannot decode into %s", t)
			return
		}
		if x := d.plain(n, path); x != nil {
			v.Set(reflect.ValueOf(x))
		}
	case reflect.Struct:
		d.structure(n, path, v)
	case reflect.Map:
		d.mapping(n, path, v)
	case reflect.Slice:
		d.sequence(n, path, v)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(n, path, "want a string, got %s", describe(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		b, ok := scalarBool(n)
		if !ok {
			d.fail(n, path, "want true or false, got %s", describe(n))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, ok := scalarInt(n)
		if !ok || v.OverflowInt(i) {
			d.fail(n, path, "want an integer, got %s", describe(n))
			return
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		i, ok := scalarInt(n)
		if !ok || i < 0 || v.OverflowUint(uint64(i)) {
			d.fail(n, path, "want a non-negative integer, got %s", describe(n))
			return
		}
		v.SetUint(uint64(i))
	case reflect.Float32, reflect.Float64:
		f, ok := scalarFloat(n)
		if !ok {
			d.fail(n, path, "want a number, got %s", describe(n))
			return
		}
		v.SetFloat(f)
	default:
		d.fail(n, path, "cannot decode into %s", t)
	}
}

// unmarshaler hands the value to a json.Unmarshaler (resource quantities,
// int-or-string and the like), as JSON.
func (d *decoder) unmarshaler(n *yaml.Node, path string, v reflect.Value) {
	x := d.plain(n, path)
	if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!str" {
		// 0.5 for a quantity is written as a number; its text is what counts.
		if _, isString := x.(string); !isString {
			if _, err := strconv.ParseFloat(n.Value, 64); err == nil {
				x = json.Number(n.Value)
			}
		}
	}
	b, err := json.Marshal(x)
	if err != nil {
		d.fail(n, path, "%v", err)
		return
	}
	if err := v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(b); err != nil {
		d.fail(n, path, "%v", err)
	}
}

// plain converts a node into plain Go values.
func (d *decoder) plain(n *yaml.Node, path string) any {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		d.eachKey(n, path, func(key string, kn, vn *yaml.Node) {
			m[key] = d.plain(vn, join(path, key))
		})
		return m
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			s = append(s, d.plain(c, index(path, i)))
		}
		return s
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!bool":
			b, _ := scalarBool(n)
			return b
		case "!!int":
			if i, ok := scalarInt(n); ok {
				return int(i)
			}
			return n.Value
		case "!!float":
			if f, ok := scalarFloat(n); ok {
				return f
			}
			return n.Value
		default:
			return n.Value
		}
	}
	d.fail(n, path, "unsupported YAML node")
	return nil
}

// eachKey walks a mapping's keys in document order, following merge keys
// (<<) and reporting keys given twice and keys that are not strings.
func (d *decoder) eachKey(n *yaml.Node, path string, fn func(key string, kn, vn *yaml.Node)) {
	seen := map[string]bool{}
	var walk func(m *yaml.Node, merged bool)
	walk = func(m *yaml.Node, merged bool) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			kn, vn := resolve(m.Content[i]), m.Content[i+1]
			if kn.Kind == yaml.ScalarNode && kn.ShortTag() == "!!merge" {
				src := resolve(vn)
				switch src.Kind {
				case yaml.MappingNode:
					walk(src, true)
				case yaml.SequenceNode:
					for _, s := range src.Content {
						if s = resolve(s); s.Kind == yaml.MappingNode {
							walk(s, true)
						}
					}
				default:
					d.fail(kn, path, "merge key (<<) wants a mapping or a list of mappings, got %s", describe(src))
				}
				continue
			}
			if kn.Kind != yaml.ScalarNode {
				d.fail(kn, path, "a key is %s, want a string", describe(kn))
				continue
			}
			key := kn.Value
			if seen[key] {
				if !merged {
					d.fail(kn, join(path, key), "given twice")
				}
				continue
			}
			seen[key] = true
			fn(key, kn, vn)
		}
	}
	walk(n, false)
}

func (d *decoder) mapping(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping, got %s", describe(n))
		return
	}
	t := v.Type()
	if t.Key().Kind() != reflect.String {
		d.fail(n, path, "cannot decode into %s", t)
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(t))
	}
	d.eachKey(n, path, func(key string, _, vn *yaml.Node) {
		ev := reflect.New(t.Elem()).Elem()
		d.value(vn, join(path, key), ev)
		v.SetMapIndex(reflect.ValueOf(key).Convert(t.Key()), ev)
	})
}

func (d *decoder) sequence(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "want a list, got %s", describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, c := range n.Content {
		d.value(c, index(path, i), s.Index(i))
	}
	v.Set(s)
}

// field is one decodable field of a struct, found by its json name.
type field struct {
	name  string
	index []int
}

func fieldsOf(t reflect.Type) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		// Embedded structs lend their fields, exported or not, as in encoding/json.
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for _, inner := range fieldsOf(f.Type) {
				out = append(out, field{name: inner.name, index: append([]int{i}, inner.index...)})
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, field{name: name, index: []int{i}})
	}
	return out
}

func (d *decoder) structure(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping, got %s", describe(n))
		return
	}
	fields := fieldsOf(v.Type())
	byName := make(map[string]field, len(fields))
	names := make([]string, 0, len(fields))
	for _, f := range fields {
		byName[f.name] = f
		names = append(names, f.name)
	}
	sort.Strings(names)
	d.eachKey(n, path, func(key string, kn, vn *yaml.Node) {
		f, ok := byName[key]
		if !ok && key == SchemaTypeKey {
			if vn.Kind != yaml.ScalarNode || vn.Tag != "!!str" {
				d.fail(vn, join(path, key), "want the name of a KCL schema, got %s", describe(vn))
			}
			return
		}
		if !ok {
			d.fail(kn, join(path, key), "unknown field (want one of %s)", strings.Join(names, ", "))
			return
		}
		d.value(vn, join(path, key), v.FieldByIndex(f.index))
	})
}

func scalarBool(n *yaml.Node) (bool, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		return false, false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		return false, false
	}
	return b, true
}

func scalarInt(n *yaml.Node) (int64, bool) {
	if n.Kind != yaml.ScalarNode {
		return 0, false
	}
	switch n.ShortTag() {
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			return 0, false
		}
		return i, true
	case "!!float":
		// 2.0 is an integer; 2.5 is not.
		f, ok := scalarFloat(n)
		if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, false
		}
		return int64(f), true
	}
	return 0, false
}

func scalarFloat(n *yaml.Node) (float64, bool) {
	if n.Kind != yaml.ScalarNode {
		return 0, false
	}
	switch n.ShortTag() {
	case "!!int", "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return 0, false
		}
		return f, true
	}
	return 0, false
}

// describe says what a node holds, for messages: the number 2, a list.
func describe(n *yaml.Node) string {
	n = resolve(n)
	switch {
	case n == nil || isNull(n):
		return "null"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	}
	// A string's text is never repeated: it may be a secret put in the
	// wrong place, and messages end up in pull request comments.
	switch n.ShortTag() {
	case "!!bool":
		return "the boolean " + n.Value
	case "!!int", "!!float":
		if len(n.Value) <= 20 {
			return "the number " + n.Value
		}
		return "a number"
	}
	return "a string"
}

// Join appends a key to a path.
func Join(path, key string) string { return join(path, key) }

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}
