package kusionhome

import (
	"os/user"
	"path/filepath"
	"testing"
)

// TestDirAsKusionFindsIt: without KUSION_HOME, Kusion's folder is in the
// home the password database gives, whatever $HOME says (a CI job or sudo
// setting HOME elsewhere): kusionpr and the Kusion CLI read one config.yaml.
func TestDirAsKusionFindsIt(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	// A user with no entry falls back on $HOME.
	want := filepath.Join(home, ".kusion")
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		want = filepath.Join(u.HomeDir, ".kusion")
	}
	for _, tc := range []struct{ kusionHome, want string }{
		{"", want},
		{"/srv/kusion", "/srv/kusion"},
	} {
		t.Setenv("KUSION_HOME", tc.kusionHome)
		if got, err := Dir(); err != nil || got != tc.want {
			t.Errorf("KUSION_HOME=%q: Dir() = %q, %v; want %q", tc.kusionHome, got, err, tc.want)
		}
	}
}
