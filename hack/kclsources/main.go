// Command kclsources serves the test environment's KCL packages the way
// Kusion's stacks fetch them: "serve-git" runs git's own smart-HTTP server
// (git http-backend, through net/http/cgi) over a folder of bare
// repositories, and "publish" pushes the packages of
// internal/testenv/kclpkgs to a registry in kpm's OCI format and makes
// the git repositories. hack/testenv.sh runs both.
//
//	kclsources serve-git -addr 127.0.0.1:PORT -root DIR
//	kclsources publish -registry 127.0.0.1:PORT -git-root DIR -packages internal/testenv/kclpkgs
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, log, os.Args[1:]); err != nil {
		log.Error("kclsources failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: kclsources serve-git|publish [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	switch args[0] {
	case "serve-git":
		addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
		root := fs.String("root", "", "folder of bare repositories")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return serveGit(ctx, log, *addr, *root)
	case "publish":
		registry := fs.String("registry", "", "registry host:port (plain HTTP)")
		gitRoot := fs.String("git-root", "", "folder the git server serves")
		pkgs := fs.String("packages", "", "the folder of the packages (internal/testenv/kclpkgs)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *registry == "" || *gitRoot == "" || *pkgs == "" {
			return errors.New("publish needs -registry, -git-root and -packages")
		}
		return publish(ctx, log, *registry, *gitRoot, *pkgs)
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// serveGit serves the bare repositories under root over smart HTTP with
// git http-backend, git's own server side, and logs each request.
func serveGit(ctx context.Context, log *slog.Logger, addr, root string) error {
	if root == "" {
		return errors.New("serve-git needs -root")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return fmt.Errorf("finding the repositories' folder: %w", err)
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return fmt.Errorf("finding git: %w", err)
	}
	backend := &cgi.Handler{
		Path: git,
		Args: []string{"http-backend"},
		Env: []string{
			"GIT_PROJECT_ROOT=" + abs,
			// Every repository under root is served, without a
			// git-daemon-export-ok file in each.
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"HOME=" + abs,
		},
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.Info("git request", "method", r.Method, "path", r.URL.Path, "query", r.URL.RawQuery)
		backend.ServeHTTP(w, r)
	})
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	log.Info("serving git", "addr", l.Addr().String(), "root", abs)
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving git: %w", err)
	}
	return nil
}
