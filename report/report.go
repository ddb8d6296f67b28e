// Package report renders previews for people and machines: Kusion's preview
// JSON, the Markdown of a pull-request comment, and plain text for a
// terminal, from the templates in templates/. Every output passes through
// model.MaskFingerprints, so no sensitive value or digest of one is printed.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"unicode"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/internal/yamlenc"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/templates"
)

// Format names an output.
type Format string

const (
	JSON     Format = "json"
	Markdown Format = "markdown"
	Text     Format = "text"
)

// ParseFormat checks a -o value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case JSON, Markdown, Text:
		return f, nil
	}
	return "", fmt.Errorf("unknown output format %q: want json, markdown or text", s)
}

// Renderer renders previews; it parses the templates once.
type Renderer struct {
	md, txt, overview *template.Template
}

// New parses the embedded templates.
func New() (*Renderer, error) {
	// Values from the repository reach the Markdown only through
	// mdsafe's functions (code, htmlText, fence, plain).
	funcs := mdsafe.Funcs()
	for name, f := range map[string]any{
		"actionIcon":  actionIcon,
		"changeLines": changeLines,
		"driftLines":  driftLines,
		"textChange":  textChange,
	} {
		funcs[name] = f
	}
	md, err := template.New("preview.md.tmpl").Funcs(funcs).ParseFS(templates.FS, "preview.md.tmpl")
	if err != nil {
		return nil, fmt.Errorf("parse markdown template: %w", err)
	}
	txt, err := template.New("preview.txt.tmpl").Funcs(funcs).ParseFS(templates.FS, "preview.txt.tmpl")
	if err != nil {
		return nil, fmt.Errorf("parse text template: %w", err)
	}
	overview, err := template.New("overview.md.tmpl").Funcs(funcs).ParseFS(templates.FS, "overview.md.tmpl")
	if err != nil {
		return nil, fmt.Errorf("parse overview template: %w", err)
	}
	return &Renderer{md: md, txt: txt, overview: overview}, nil
}

// view is what the templates see.
type view struct {
	*engine.Preview
	Summary engine.Summary
	Steps   []*engine.Step
	Changed []*engine.Step
	Drifted []*engine.Step
	// FailedSteps are the resources that could not be previewed.
	FailedSteps []*engine.Step
	// NotChecked counts the resources no dry run could check, by what
	// was not checked (engine.Step.NotChecked), in the order first met.
	NotChecked []NotChecked
	// Errors is the stack's error when no resource carries one.
	Errors []string
	Failed bool
	// Extra is an error of the whole stack (no spec, unreachable backend).
	Extra string
	// Marker is the comment's hidden first line.
	Marker string
	// Release, when set, is what an apply recorded: the comment reports it.
	Release *model.Release
	// Destroy: the release removed the whole stack.
	Destroy bool
	// Location is where the stack is in the repository.
	Location string
	// RunURL is the run that did the work, when not this process.
	RunURL string
	// Policy is what the policies said of the plan, when some judged it.
	Policy *PolicyReport
	// detail, when set, bounds the created resources' attributes shown.
	detail *detail
}

// detail is what is left of CommentOptions.MaxDetail as a comment renders.
type detail struct{ left int }

// AttributesYAML is a created resource's attributes as YAML, or "" once
// the comment has shown CommentOptions.MaxDetail bytes of them: beyond
// what GitHub can show of a comment, rendering them (the most of a large
// preview's time and memory) would only feed the part thrown away.
func (v view) AttributesYAML(r *model.Resource) string {
	if v.detail != nil && v.detail.left <= 0 {
		return ""
	}
	s := attributesYAML(r)
	if v.detail != nil {
		v.detail.left -= len(s)
	}
	return s
}

// NotChecked is how many resources share one note of what no dry run
// checked of them ("in a namespace this apply creates: ...").
type NotChecked struct {
	Count int
	What  string
}

// PolicyReport is what the policies said of a stack's plan.
type PolicyReport struct {
	// Source says where the rules were read from, for people ("policy/
	// at the base branch's 1a2b3c4").
	Source string
	// Denies refuse the plan; Warnings only inform.
	Denies, Warnings []PolicyFinding
	// Err: the rules could not be evaluated, which refuses the plan
	// (fail closed).
	Err string
	// Changed: the change edits the policy folder, which judges it only
	// once merged.
	Changed bool
}

// PolicyFinding is one rule's message.
type PolicyFinding struct {
	Rule, Message string
	// Overridden: an authorised override let the plan through this rule.
	Overridden bool
	// Operator: the rule is the operator's, not the repository's.
	Operator bool
}

// Refused says whether the policies refuse the plan.
func (r *PolicyReport) Refused() bool {
	if r == nil {
		return false
	}
	if r.Err != "" {
		return true
	}
	for _, d := range r.Denies {
		if !d.Overridden {
			return true
		}
	}
	return false
}

func newView(p *engine.Preview, stackErr error) view {
	v := view{Preview: p, Summary: p.Summary(), Steps: p.Steps()}
	for _, st := range v.Steps {
		switch {
		case st.Action == engine.Failed || st.Error != "":
			v.FailedSteps = append(v.FailedSteps, st)
			continue
		case st.Action != engine.UnChanged:
			v.Changed = append(v.Changed, st)
		}
		if len(st.Drift) > 0 {
			v.Drifted = append(v.Drifted, st)
		}
		if st.NotChecked != "" {
			i := slices.IndexFunc(v.NotChecked, func(n NotChecked) bool { return n.What == st.NotChecked })
			if i < 0 {
				i = len(v.NotChecked)
				v.NotChecked = append(v.NotChecked, NotChecked{What: st.NotChecked})
			}
			v.NotChecked[i].Count++
		}
	}
	if stackErr != nil && len(v.FailedSteps) == 0 {
		v.Errors = append(v.Errors, stackErr.Error())
	}
	v.Failed = len(v.Errors) > 0 || len(v.FailedSteps) > 0
	v.Marker = fmt.Sprintf("<!-- kusionpr:preview project=%s stack=%s workspace=%s -->",
		mdsafe.CommentValue(p.Project), mdsafe.CommentValue(p.Stack), mdsafe.CommentValue(p.Workspace))
	return v
}

// CommentOptions shape a pull-request comment.
type CommentOptions struct {
	// Marker replaces the default hidden first line.
	Marker string
	// Release makes the comment the report of an apply or destroy.
	Release *model.Release
	// Location is the stack's folder in the repository, shown beside its name.
	Location string
	// Destroy: the release is a destroy's (its spec lists what it
	// destroyed, as Kusion's do).
	Destroy bool
	// RunURL links the run that did the work away from this process (a
	// GitHub Actions run's page). It is shown only if it is a plain
	// http(s) address, so that no Markdown can ride in it.
	RunURL string
	// Policy is what the policies said of the plan.
	Policy *PolicyReport
	// MaxDetail, when above 0, is how many bytes of created resources'
	// attributes the comment shows; the resources past it are listed
	// without them. Set it to what the comment's reader can be shown at
	// most (its parts, a job summary): past it, nothing is lost.
	MaxDetail int
}

// plainURL is an address a comment may link as it is: no character that
// could end the link or start markup.
var plainURL = regexp.MustCompile(`^https?://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._~%/-]*)?$`)

// Comment renders p as a pull-request comment.
func (r *Renderer) Comment(p *engine.Preview, stackErr error, opts CommentOptions) (string, error) {
	v := newView(p, stackErr)
	if opts.Marker != "" {
		v.Marker = opts.Marker
	}
	v.Release = opts.Release
	v.Location = opts.Location
	v.Policy = opts.Policy
	if opts.MaxDetail > 0 {
		v.detail = &detail{left: opts.MaxDetail}
	}
	if opts.Policy.Refused() {
		v.Failed = true
	}
	if plainURL.MatchString(opts.RunURL) {
		v.RunURL = opts.RunURL
	}
	v.Destroy = opts.Release != nil && (opts.Destroy || opts.Release.Spec == nil || len(opts.Release.Spec.Resources) == 0)
	var buf bytes.Buffer
	if err := r.md.Execute(&buf, v); err != nil {
		return "", fmt.Errorf("render markdown: %w", err)
	}
	return model.MaskFingerprints(buf.String()), nil
}

// Render writes p in format f. stackErr, if not nil, is shown as the stack's
// failure when no step carries it.
func (r *Renderer) Render(w io.Writer, f Format, p *engine.Preview, stackErr error) error {
	var buf bytes.Buffer
	switch f {
	case JSON:
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(p); err != nil {
			return fmt.Errorf("render json: %w", err)
		}
	case Markdown:
		if err := r.md.Execute(&buf, newView(p, stackErr)); err != nil {
			return fmt.Errorf("render markdown: %w", err)
		}
	case Text:
		if err := r.txt.Execute(&buf, newView(p, stackErr)); err != nil {
			return fmt.Errorf("render text: %w", err)
		}
	default:
		return fmt.Errorf("unknown output format %q", f)
	}
	_, err := io.WriteString(w, model.MaskFingerprints(buf.String()))
	return err
}

func actionIcon(a engine.Action) string {
	switch a {
	case engine.Create:
		return "+"
	case engine.Update:
		return "~"
	case engine.Delete:
		return "-"
	case engine.Failed:
		return "x"
	}
	return "="
}

// maxValue bounds one value in a comment; the JSON output keeps it whole.
const maxValue = 300

func value(v any) string {
	var s string
	switch t := v.(type) {
	case nil:
		s = "null"
	case string:
		if t == model.KnownAfterApply || t == model.SensitiveMask {
			return t
		}
		s = fmt.Sprintf("%q", t)
	default:
		b, err := json.Marshal(t)
		if err != nil {
			s = fmt.Sprint(t)
		} else {
			s = string(b)
		}
	}
	if len(s) > maxValue {
		s = s[:maxValue] + "…"
	}
	return s
}

// changeLines is the body of a diff block: a line per old and new value.
// The template fences it (mdsafe.Fence), so nothing in a path or value can
// end the block.
func changeLines(cs []engine.FieldChange) string {
	var b strings.Builder
	for _, c := range cs {
		c.Path = fieldPath(c.Path)
		switch c.Op {
		case "add":
			b.WriteString("+ " + c.Path + ": " + value(c.To) + "\n")
		case "remove":
			b.WriteString("- " + c.Path + ": " + value(c.From) + "\n")
		default:
			b.WriteString("- " + c.Path + ": " + value(c.From) + "\n+ " + c.Path + ": " + value(c.To) + "\n")
		}
	}
	return b.String()
}

// driftLines is the body of a drift block, a line per field.
func driftLines(cs []engine.FieldChange) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString("! " + textChange(c) + "\n")
	}
	return b.String()
}

func textChange(c engine.FieldChange) string {
	c.Path = fieldPath(c.Path)
	switch c.Op {
	case "add":
		return c.Path + ": (none) => " + value(c.To)
	case "remove":
		return c.Path + ": " + value(c.From) + " => (removed)"
	}
	return c.Path + ": " + value(c.From) + " => " + value(c.To)
}

// fieldPath shows a path as is, or quoted when it holds a line break or
// another control character: a key such as "a\n+ replicas: 1" must not
// show as a line of the diff of its own.
func fieldPath(p string) string {
	if strings.IndexFunc(p, unicode.IsControl) >= 0 {
		return strconv.Quote(p)
	}
	return p
}

func attributesYAML(r *model.Resource) string {
	if r == nil {
		return ""
	}
	b, err := yamlenc.Marshal(r.Attributes)
	if err != nil {
		return err.Error() + "\n"
	}
	// The template fences it with more backticks than any run in it.
	return string(b)
}
