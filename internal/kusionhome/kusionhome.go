// Package kusionhome finds Kusion's data folder as the Kusion CLI finds it,
// so that both tools read the same config.yaml, the same default release
// folder and the same module binaries.
package kusionhome

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
)

// Dir is $KUSION_HOME, else .kusion in the current user's home as the
// password database gives it (kusionstack.io/kusion pkg/util/kfile
// KusionDataFolder uses user.Current, not $HOME). $HOME is the fallback
// only when the user cannot be looked up (a container running as a user
// id that has no entry).
func Dir() (string, error) {
	if h := os.Getenv("KUSION_HOME"); h != "" {
		return h, nil
	}
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		return filepath.Join(u.HomeDir, ".kusion"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errors.New("finding Kusion's folder: KUSION_HOME is not set and the current user has no home folder")
	}
	return filepath.Join(home, ".kusion"), nil
}
