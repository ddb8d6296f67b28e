package deps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// gitRunner runs the git binary with nothing of the process's environment
// or configuration: the host's and user's git configuration (credential
// helpers, URL rewrites, proxies) must not apply to a fetch a pull request
// asked for, and no prompt may wait for input.
type gitRunner struct {
	bin  string
	home string // an empty folder, HOME for git
}

func (g gitRunner) env() []string {
	env := []string{
		"HOME=" + g.home,
		"XDG_CONFIG_HOME=" + g.home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=/bin/false",
		"SSH_ASKPASS=/bin/false",
		"GIT_PROTOCOL_FROM_USER=0",
		"LC_ALL=C",
	}
	// PATH only: git finds its own helpers in its exec path, and may need
	// PATH for nothing else.
	if p, ok := os.LookupEnv("PATH"); ok {
		env = append(env, "PATH="+p)
	}
	return env
}

// run runs git in dir with the fixed configuration and the extra -c
// settings, writing standard output to out.
func (g gitRunner) run(ctx context.Context, dir string, config []string, out io.Writer, args ...string) error {
	full := []string{
		"-c", "protocol.allow=never",
		"-c", "http.followRedirects=false",
		"-c", "credential.helper=",
		"-c", "core.hooksPath=/dev/null",
		"-c", "core.askPass=/bin/false",
		"-c", "init.defaultBranch=main",
		"-c", "transfer.fsckObjects=true",
	}
	for _, c := range config {
		full = append(full, "-c", c)
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, g.bin, full...)
	cmd.Dir = dir
	cmd.Env = g.env()
	var stderr bytes.Buffer
	cmd.Stdout = out
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// fetchGit fetches the commit a reference names from the repository at
// loc into dir (its files only, no .git) and returns the commit id. ip is
// the address, checked already, that connections to loc's host go to.
func fetchGit(ctx context.Context, g gitRunner, loc location, ip string, tag, commit, branch string, lim Limits, dir string) (string, error) {
	scheme := "https"
	if loc.plain {
		scheme = "http"
	}
	url := scheme + "://" + loc.String()
	config := []string{
		"protocol." + scheme + ".allow=always",
		// Pins the name to the address checked, so git's own lookup
		// cannot answer otherwise (curl's CURLOPT_RESOLVE; TLS still
		// verifies the name).
		fmt.Sprintf("http.curloptResolve=%s:%d:%s", loc.host, loc.defaultPort(), bracket(ip)),
	}
	repo, err := os.MkdirTemp(g.home, "repo-*")
	if err != nil {
		return "", fmt.Errorf("making a folder for the repository: %w", err)
	}
	defer os.RemoveAll(repo)
	if err := g.run(ctx, repo, nil, io.Discard, "init", "-q", "--bare"); err != nil {
		return "", err
	}
	var want string
	switch {
	case commit != "":
		want = commit
	case tag != "":
		want = "refs/tags/" + tag
	case branch != "":
		want = "refs/heads/" + branch
	default:
		want = "HEAD"
	}
	if err := g.run(ctx, repo, config, io.Discard, "fetch", "-q", "--no-tags", "--depth=1", url, want); err != nil {
		if commit == "" {
			return "", fmt.Errorf("fetching %s from %s: %w", want, url, err)
		}
		// A server that does not serve unadvertised commits by id: fetch
		// its branches and tags and look for the commit among them.
		if err2 := g.run(ctx, repo, config, io.Discard, "fetch", "-q", "--no-tags", url, "+refs/heads/*:refs/remotes/r/*", "+refs/tags/*:refs/tags/*"); err2 != nil {
			return "", fmt.Errorf("fetching commit %s from %s: %w", commit, url, errors.Join(err, err2))
		}
	}
	rev := "FETCH_HEAD^{commit}"
	if commit != "" {
		rev = commit + "^{commit}"
	}
	var id bytes.Buffer
	if err := g.run(ctx, repo, nil, &id, "rev-parse", "--verify", "--end-of-options", rev); err != nil {
		return "", fmt.Errorf("finding the fetched commit of %s: %w", url, err)
	}
	got := strings.TrimSpace(id.String())
	if commit != "" && got != commit {
		return "", fmt.Errorf("%s answered commit %s for %s", url, got, commit)
	}
	// git archive writes the commit's tree as a tar, which extract checks
	// and bounds like an OCI layer.
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := g.run(ctx, repo, nil, pw, "archive", "--format=tar", got)
		pw.CloseWithError(err)
		errc <- err
	}()
	xerr := extract(pr, dir, lim)
	if xerr == nil {
		// The tar's end-of-archive blocks come before git's last padding.
		_, xerr = io.Copy(io.Discard, pr)
	}
	pr.CloseWithError(errors.New("extraction ended"))
	aerr := <-errc
	if xerr != nil {
		return "", xerr
	}
	if aerr != nil {
		return "", fmt.Errorf("exporting commit %s of %s: %w", got, url, aerr)
	}
	return got, nil
}

func bracket(ip string) string {
	if strings.Contains(ip, ":") {
		return "[" + ip + "]"
	}
	return ip
}
