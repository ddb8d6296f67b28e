package cloudtoken

import (
	"reflect"
	"testing"
)

// TestSteersCoversEveryParameter: every parameter of a plugin is either
// one a spec's kubeconfig may set (the cluster's, and what every
// kubeconfig of its cloud's CLI carries) or named by Steers, so a
// parameter added to the recognised flags is refused in specs until it is
// judged harmless here.
func TestSteersCoversEveryParameter(t *testing.T) {
	free := map[string]bool{
		"EKS.ClusterName": true, "EKS.Region": true,
		"AKS.Login": true, "AKS.TenantID": true, "AKS.ClientID": true, "AKS.Environment": true,
		// The entry's own secrets, not the runner's.
		"AKS.ClientSecret": true, "AKS.ClientCertificatePassword": true,
	}
	for _, group := range []string{"EKS", "AKS"} {
		typ := reflect.ValueOf(Plugin{}).FieldByName(group).Type()
		for i := range typ.NumField() {
			name := group + "." + typ.Field(i).Name
			var p Plugin
			reflect.ValueOf(&p).Elem().FieldByName(group).Field(i).SetString("https://steered.example")
			if got := p.Steers(); (got == "") != free[name] {
				t.Errorf("%s set: Steers() = %q; free in a spec: %v", name, got, free[name])
			}
		}
	}
	if got := (Plugin{Env: map[string]string{"AWS_PROFILE": "admin"}}).Steers(); got != "env" {
		t.Errorf("an env: Steers() = %q", got)
	}
	if got := (Plugin{AKS: AKSParams{ServerID: DefaultAKSServerID}}).Steers(); got != "" {
		t.Errorf("AKS's own server: Steers() = %q, want nothing", got)
	}
}
