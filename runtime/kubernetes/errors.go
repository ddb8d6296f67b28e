package kubernetes

import (
	"encoding/base64"
	"errors"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kusionpr/kusionpr/model"
)

// minSecretLen is the shortest Secret value scrubbed from error messages;
// shorter ones would mangle the message and reveal next to nothing.
const minSecretLen = 3

// scrubError removes a Secret's values (as given, base64-encoded and decoded)
// from err's message: the API server may echo part of the object it refused.
// An API status error keeps its code, reason and details, scrubbed, so
// apierrors.IsNotFound and friends still work on the result.
func scrubError(err error, obj map[string]any) error {
	if err == nil {
		return nil
	}
	secrets := secretValues(obj)
	if len(secrets) == 0 {
		return err
	}
	scrub := func(s string) string {
		for _, v := range secrets {
			s = strings.ReplaceAll(s, v, model.SensitiveMask)
		}
		return s
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		orig := se.Status()
		st := *orig.DeepCopy()
		st.Message = scrub(st.Message)
		if st.Details != nil {
			for i := range st.Details.Causes {
				st.Details.Causes[i].Message = scrub(st.Details.Causes[i].Message)
				st.Details.Causes[i].Field = scrub(st.Details.Causes[i].Field)
			}
		}
		changed := st.Message != orig.Message
		if st.Details != nil {
			for i, c := range st.Details.Causes {
				changed = changed || c != orig.Details.Causes[i]
			}
		}
		if !changed && scrub(err.Error()) == err.Error() {
			return err
		}
		return &apierrors.StatusError{ErrStatus: st}
	}
	if msg := scrub(err.Error()); msg != err.Error() {
		return errors.New(msg)
	}
	return err
}

// secretValues lists the sensitive strings of a Secret object, longest first.
func secretValues(obj map[string]any) []string {
	if obj == nil || obj["kind"] != "Secret" {
		return nil
	}
	seen := map[string]bool{}
	add := func(s string) {
		if len(s) >= minSecretLen {
			seen[s] = true
		}
	}
	for _, field := range []string{"data", "stringData"} {
		m, _ := obj[field].(map[string]any)
		for _, v := range m {
			s, ok := v.(string)
			if !ok || model.IsFingerprint(s) {
				continue
			}
			add(s)
			if field == "data" {
				if raw, err := base64.StdEncoding.DecodeString(s); err == nil {
					add(string(raw))
				}
			} else {
				add(base64.StdEncoding.EncodeToString([]byte(s)))
			}
		}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}
