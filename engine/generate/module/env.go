package module

import (
	"os"
	"slices"
)

// Environ is the environment a module binary runs with: of this process's
// variables only those a program needs to run (PATH, HOME, TMPDIR, the
// locale and time zone, proxies, CA certificates) and those pass names.
// A module is a binary the operator installed, but it gets what it needs,
// not what the bot holds: the App's key, the webhook secret, the release
// store's credentials stay out.
func Environ(pass []string) []string {
	names := append([]string{
		"PATH", "HOME", "USER", "TMPDIR", "TZ",
		"LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES",
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
		"SSL_CERT_FILE", "SSL_CERT_DIR",
	}, pass...)
	var env []string
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		if v, ok := os.LookupEnv(n); ok {
			env = append(env, n+"="+v)
		}
	}
	slices.Sort(env)
	return env
}
