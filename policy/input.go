package policy

import (
	"encoding/json"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
)

// Input is one stack's document: what rules see as `input`. A rule's
// message lands in a pull-request comment, so the document holds only what
// a comment may show: sensitive values are "(sensitive)", as in `preview -o
// json`, and the spec's context and secret store (a kubeconfig, a store's
// credentials) are left out.
type Input struct {
	// Preview is marshalled exactly as `preview -o json` prints it.
	Preview *engine.Preview `json:"preview"`
	// Spec is the stack's spec: its resources, sensitive values masked.
	Spec        *model.Spec  `json:"spec"`
	Project     string       `json:"project"`
	Stack       string       `json:"stack"`     // the stack's name
	Dir         string       `json:"dir"`       // the stack's folder in the repository
	Workspace   string       `json:"workspace"` // the workspace it is previewed in
	PullRequest *PullRequest `json:"pullRequest,omitempty"`
}

// PullRequest is the pull request a preview is made for.
type PullRequest struct {
	Number int    `json:"number"`
	Author string `json:"author"`
	Base   string `json:"base"` // the base commit's SHA
	Head   string `json:"head"` // the head commit's SHA
}

// value is the input as OPA reads it, masked.
func (in Input) value() (ast.Value, error) {
	b, err := in.JSON()
	if err != nil {
		return nil, err
	}
	var doc any
	if err := util.UnmarshalJSON(b, &doc); err != nil {
		return nil, fmt.Errorf("policy input: %w", err)
	}
	v, err := ast.InterfaceToValue(doc)
	if err != nil {
		return nil, fmt.Errorf("policy input: %w", err)
	}
	return v, nil
}

// JSON is the document rules see as input: what `action policy` users may
// save and test their rules against.
func (in Input) JSON() ([]byte, error) {
	in.Spec = publicSpec(in.Spec, in.Preview)
	b, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("policy input: %w", err)
	}
	// Fingerprints become the mask, as in every output people read: a
	// digest of a short secret can be guessed.
	return []byte(model.MaskFingerprints(string(b))), nil
}

// publicSpec is s's resources as a preview shows them: a Secret's data, the
// paths the spec marks sensitive and those the preview found sensitive (a
// Terraform provider's schema) fingerprinted. A Terraform resource whose
// sensitive paths the preview does not know (its preview failed) has all
// its attributes masked.
func publicSpec(s *model.Spec, p *engine.Preview) *model.Spec {
	if s == nil {
		return nil
	}
	out := &model.Spec{Resources: model.Resources{}}
	for _, r := range s.Resources {
		var paths []string
		known := false
		if p != nil {
			if st := p.ChangeSteps[r.ID]; st != nil {
				for _, x := range []*model.Resource{st.From, st.To} {
					if x != nil {
						known = true
						paths = append(paths, model.SensitivePaths(*x)...)
					}
				}
			}
		}
		if r.Type == model.Terraform && !known {
			for k := range r.Attributes {
				paths = append(paths, k)
			}
		}
		out.Resources = append(out.Resources, model.Public(model.WithSensitivePaths(r, paths)))
	}
	return out
}
