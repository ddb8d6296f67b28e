package module

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/kusionpr/kusionpr/internal/kusionhome"
)

// Home returns where Kusion keeps module binaries: $KUSION_MODULE_PATH if
// set, else the modules folder of Kusion's data folder, where `kusion
// generate` copies them (kusionstack.io/kusion pkg/engine/api/generate
// CopyDependentModules): $KUSION_HOME/modules, else $KUSION_PATH/modules
// (an older Kusion's variable), else .kusion/modules in the user's home as
// Kusion finds it (kusionhome.Dir).
func Home() (string, error) {
	if p, ok := os.LookupEnv("KUSION_MODULE_PATH"); ok && p != "" {
		return p, nil
	}
	if os.Getenv("KUSION_HOME") == "" {
		if p := os.Getenv("KUSION_PATH"); p != "" {
			return filepath.Join(p, "modules"), nil
		}
	}
	dir, err := kusionhome.Dir()
	if err != nil {
		return "", fmt.Errorf("finding Kusion's module folder: %w", err)
	}
	return filepath.Join(dir, "modules"), nil
}

// HomeIn is Home for Kusion's folder kusionHome: $KUSION_MODULE_PATH if
// set, else its modules folder.
func HomeIn(kusionHome string) string {
	if p := os.Getenv("KUSION_MODULE_PATH"); p != "" {
		return p
	}
	return filepath.Join(kusionHome, "modules")
}

// Find locates the binary of the module registered in a workspace with path
// and version, under home (Home() when empty).
//
// Kusion keys a module as "<ns>/<name>@<version>": for an OCI path the ns and
// name are the repository without its registry host (kpm's Oci.Repo, so
// oci://ghcr.io/kusionstack/mysql is kusionstack/mysql), for a Git URL the
// last two path segments without ".git" (kusionstack.io/kusion
// pkg/modules/generators/app_configurations_generator.go parseModuleKey).
// Both come to the last two segments of path, which is what Find takes; a
// bare "kusionstack/mysql" works too. The binary then lies at
//
//	<home>/<ns>/<name>/<version>/<GOOS>/<GOARCH>/kusion-module-<name>_<version>
//
// (pkg/modules/plugin.go buildPluginPath), the version as written, with or
// without a leading "v".
func Find(home, path, version string) (string, error) {
	key := path + "@" + version
	ns, name, err := splitModulePath(path)
	if err != nil {
		return "", fmt.Errorf("finding module %s: %w", key, err)
	}
	if err := checkSegment("version", version); err != nil {
		return "", fmt.Errorf("finding module %s: %w", key, err)
	}
	if home == "" {
		if home, err = Home(); err != nil {
			return "", fmt.Errorf("finding module %s: %w", key, err)
		}
	}
	bin := filepath.Join(home, ns, name, version, runtime.GOOS, runtime.GOARCH, "kusion-module-"+name+"_"+version)
	info, err := os.Stat(bin)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("finding module %s: no binary at %s (module home %s; set KUSION_MODULE_PATH to look elsewhere)", key, bin, home)
	case err != nil:
		return "", fmt.Errorf("finding module %s: %w", key, err)
	case info.IsDir():
		return "", fmt.Errorf("finding module %s: %s is a directory, not a module binary", key, bin)
	}
	return bin, nil
}

// splitModulePath takes the namespace and name from the last two segments of
// a module path, after any scheme and ".git" suffix.
func splitModulePath(path string) (ns, name string, err error) {
	p := path
	if i := strings.Index(p, "://"); i >= 0 {
		p = p[i+3:]
	}
	p = strings.TrimSuffix(strings.TrimSuffix(p, "/"), ".git")
	parts := strings.Split(p, "/")
	if len(parts) < 2 {
		return "", "", fmt.Errorf("module path %q: want <namespace>/<name>, optionally after a registry (oci://ghcr.io/kusionstack/mysql)", path)
	}
	ns, name = parts[len(parts)-2], parts[len(parts)-1]
	if err := checkSegment("namespace", ns); err != nil {
		return "", "", err
	}
	if err := checkSegment("name", name); err != nil {
		return "", "", err
	}
	return ns, name, nil
}

// checkSegment keeps workspace input from steering the path out of the
// module home.
func checkSegment(what, s string) error {
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, `/\`) {
		return fmt.Errorf("module %s %q is not a valid path segment", what, s)
	}
	return nil
}
