package connect

import (
	"strings"
	"testing"
)

func TestParseKubeconfigs(t *testing.T) {
	got, err := ParseKubeconfigs("dev=/etc/k/dev, prod = /etc/k/prod\n\nstaging=/etc/k/staging")
	if err != nil || len(got) != 3 || got["prod"] != "/etc/k/prod" || got["staging"] != "/etc/k/staging" {
		t.Errorf("ParseKubeconfigs = %v, %v", got, err)
	}
	_, err = ParseKubeconfigs("dev,=/x,prod=")
	for _, bad := range []string{`"dev": want WORKSPACE=FILE`, `"=/x": want WORKSPACE=FILE`, `"prod=": want WORKSPACE=FILE`} {
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseKubeconfigs error %v, want it to name %s", err, bad)
		}
	}
}
