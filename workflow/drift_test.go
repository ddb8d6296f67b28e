package workflow

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/model"
)

// TestRevertTakesSensitiveValuesFromTheCheckout: a release holds a
// Secret's values as fingerprints; reverting to it takes each from the
// checkout's spec when that holds the very value, and refuses naming the
// field when it does not, rather than apply a fingerprint.
func TestRevertTakesSensitiveValuesFromTheCheckout(t *testing.T) {
	secret := func(data map[string]any) model.Resource {
		return model.Resource{ID: "v1:Secret:shop:creds", Type: model.Kubernetes, Attributes: map[string]any{
			"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "creds", "namespace": "shop"}, "data": data,
		}}
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	recorded := &model.Spec{Resources: model.Resources{model.Redact(secret(map[string]any{"password": b64("hunter2"), "user": b64("admin")}))}}
	tests := []struct {
		name     string
		checkout map[string]any
		want     map[string]any
		wantErr  string
	}{
		{name: "the same values", checkout: map[string]any{"password": b64("hunter2"), "user": b64("admin")},
			want: map[string]any{"password": b64("hunter2"), "user": b64("admin")}},
		{name: "a value changed since", checkout: map[string]any{"password": b64("newer"), "user": b64("admin")},
			wantErr: "v1:Secret:shop:creds.data.password holds a sensitive value the release recorded only by its fingerprint"},
		{name: "a value gone", checkout: map[string]any{"user": b64("admin")},
			wantErr: "v1:Secret:shop:creds.data.password"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := releaseSpecWithValues(recorded, &model.Spec{Resources: model.Resources{secret(tc.checkout)}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), b64("newer")) {
					t.Errorf("the error shows a value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			data := got.Resources[0].Attributes["data"].(map[string]any)
			for k, v := range tc.want {
				if data[k] != v {
					t.Errorf("data.%s = %v, want the checkout's value", k, data[k])
				}
			}
			if s, _ := recorded.Resources[0].Attributes["data"].(map[string]any)["password"].(string); !model.IsFingerprint(s) {
				t.Error("the release's spec was changed in place")
			}
		})
	}
}
