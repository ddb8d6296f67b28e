// Command bot is the GitHub App: it applies the stacks a merged pull request
// changed and answers /kusion commands on pull requests. Configuration comes
// from KUSIONPR_* environment variables, as package settings declares them
// (bot --help and docs/settings.md list them).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kusionpr/kusionpr/bot"
	"github.com/kusionpr/kusionpr/internal/kubelog"
	"github.com/kusionpr/kusionpr/internal/undumpable"
	"github.com/kusionpr/kusionpr/policy"
	"github.com/kusionpr/kusionpr/settings"
)

const usageHead = `usage: bot

The kusionpr GitHub App: it answers webhooks at /webhook, applies the stacks
a merged pull request changed, and answers /kusion preview|apply|unlock
commands on pull requests (health at /healthz and /readyz, metrics at
/metrics).

It takes no arguments: its settings are KUSIONPR_* environment variables, or
a YAML file named by KUSIONPR_CONFIG with the same names in lower camel case
(the environment wins). Required: KUSIONPR_WEBHOOK_SECRET, KUSIONPR_APP_ID,
and KUSIONPR_APP_PRIVATE_KEY (the App's PEM key) or
KUSIONPR_APP_PRIVATE_KEY_PATH. Where releases live: KUSIONPR_BACKEND. Every
setting is listed below, and in docs/settings.md with its names for the
action; docs/bot.md says more, and deploy/kubernetes/bot.yaml is a
deployment to start from.

`

// usage is the bot's --help: what it is, then every setting it reads,
// from their declarations.
func usage() string {
	var b strings.Builder
	b.WriteString(usageHead)
	settings.BotHelp(&b)
	return b.String()
}

func main() {
	// A child this program started to evaluate a repository's policies in.
	policy.ServeIfSandbox()
	if len(os.Args) > 1 {
		// Help asked for, or an argument the bot has no use for: say
		// where its settings are rather than start.
		switch os.Args[1] {
		case "-h", "-help", "--help", "help":
			fmt.Fprint(os.Stdout, usage())
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "bot: unknown argument %q\n\n%s", os.Args[1], usage())
		os.Exit(2)
	}
	os.Exit(run(os.Getenv, os.Stderr))
}

func run(getenv func(string) string, stderr *os.File) int {
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	// client-go's own error lines repeat what the run reports: debug
	// records of the bot's logger (kubelog).
	kubelog.Route(log)
	cfg, err := bot.LoadConfig(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "bot: %v\n", err)
		return 2
	}
	// Read once; out of the environment before any child starts, so none
	// (a module binary, Terraform, a kubeconfig's exec plugin when allowed)
	// inherits the App's key or the webhook secret.
	for _, name := range bot.SecretVariables() {
		os.Unsetenv(name)
	}
	if err := undumpable.Set(); err != nil {
		fmt.Fprintf(stderr, "bot: hide the process from its user's others: %v\n", err)
		return 2
	}
	b, err := bot.New(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "bot: %v\n", err)
		return 2
	}
	// Headers must come fast, and be small (GitHub's are a few hundred
	// bytes; net/http would take a megabyte from anyone). A webhook body
	// has a deadline of its own, seconds for GitHub's (webhook.Receive),
	// as a body still arriving holds part of the bot's budget for
	// unverified bodies (KUSIONPR_MAX_UNVERIFIED_BYTES); no request may
	// take more than 20 s in all.
	srv := &http.Server{Addr: cfg.Listen, Handler: b.Handler(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 20 * time.Second,
		MaxHeaderBytes: 64 << 10}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		drain(b, srv, cfg, log)
	}()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		fmt.Fprintf(stderr, "bot: %v\n", err)
		return 1
	}
	log.Info("listening", "addr", ln.Addr().String())
	go recoverAtStart(ctx, b, cfg, log)
	// Scans only read: stopping cuts one short, and its lease lapses.
	go b.ScheduleDrift(ctx)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("serve", "error", err)
		return 1
	}
	<-done
	return 0
}

// drain stops the bot once asked to: not ready first, still taking
// deliveries for a while, then waiting for running applies.
func drain(b *bot.Bot, srv *http.Server, cfg *bot.Config, log *slog.Logger) {
	drain, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	// Load balancers learn from /readyz that the bot is going; until
	// they have, deliveries still come and are still taken, as GitHub
	// does not resend what a closed port refused.
	b.Unready()
	log.Info("stopping: not ready; still taking deliveries for a while", "delay", cfg.ShutdownDelay.String())
	select {
	case <-time.After(cfg.ShutdownDelay):
	case <-drain.Done():
	}
	log.Info("stopping: waiting for running applies", "timeout", cfg.ShutdownTimeout.String())
	_ = srv.Shutdown(drain)
	if err := b.Drain(drain); err != nil {
		log.Error("applies still running at the deadline were cancelled", "error", err)
	}
}

// recoverAtStart asks again for the deliveries GitHub could not make
// while no bot listened, and finds in the releases the merges whose apply
// a crash or a drain lost (their deliveries were taken); then redelivery
// runs on its schedule.
func recoverAtStart(ctx context.Context, b *bot.Bot, cfg *bot.Config, log *slog.Logger) {
	asked, _, err := b.Redeliver(ctx)
	if err != nil {
		log.Error("redelivery pass at start failed", "error", err)
	}
	n, err := b.Recover(ctx)
	if err != nil {
		log.Error("recovery of lost applies failed", "error", err)
	}
	log.Info("recovery queued the merges whose apply may be missing", "queued", n, "redeliveries", asked, "window", cfg.RecoverWindow.String())
	b.ScheduleRedelivery(ctx)
}
