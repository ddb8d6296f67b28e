package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/engine/kcl"
	"github.com/kusionpr/kusionpr/executor/ghactions"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/policy"
	"github.com/kusionpr/kusionpr/report"
	"github.com/kusionpr/kusionpr/webhook"
	"github.com/kusionpr/kusionpr/workflow"
)

// Bot receives webhooks and runs what they ask for.
type Bot struct {
	cfg      *Config
	secret   []byte
	app      *githubapi.App
	log      *slog.Logger
	m        *metrics
	q        *queue
	seen     *webhook.Dedup
	renderer *report.Renderer
	ready    atomic.Bool
	// base is the context jobs run under: cancelled when a drain times out.
	base   context.Context
	cancel context.CancelFunc

	// commands remembers the comments whose command was taken, so that
	// one delivered again under another id is dropped without a call to
	// GitHub; the comment's reaction (Claim) is what holds across
	// restarts and replicas.
	commands *webhook.Dedup
	// budget bounds the webhook bodies read before their signature holds.
	budget *webhook.Budget
	// redeliver asks GitHub again for the deliveries the bot could not
	// take.
	redeliver *redelivery

	// client reaches GitHub as an installation, login names the App's
	// bot user, work does an authorised command's work: the App and the
	// workflow, or a test's fakes.
	client func(installation int64, owner, repo string) (gitHub, error)
	login  func(context.Context) (string, error)
	work   stackWork
	// kcl compiles the main.k of the checkouts being worked on, confined,
	// with the dependencies fetched once per process.
	kcl *kcl.Setup
	// executors picks each stack's executor; nil when work is a test's.
	executors *executorRouter
	// runner runs drift scans and reverts, in this process.
	runner *workflow.Runner
	// operatorRules are the operator's policies (KUSIONPR_POLICIES), read
	// at start.
	operatorRules map[string]string
	// groups are the merge queue's groups waiting for the group ahead,
	// by groupKey: a group GitHub destroys stops waiting.
	groups sync.Map // string -> *waitingGroup
	// actions, with the executor github-actions, hears of the workflow
	// runs it follows.
	actions *ghactions.Executor
	// releases reports the store's running releases as metrics, when
	// the store answers queries.
	releases *runningReleases
}

// New checks the configuration and prepares the bot.
func New(cfg *Config, log *slog.Logger) (*Bot, error) {
	secret, err := webhook.NewSecret(cfg.WebhookSecret, "KUSIONPR_WEBHOOK_SECRET")
	if err != nil {
		return nil, err
	}
	r, err := report.New()
	if err != nil {
		return nil, err
	}
	m := newMetrics()
	base, cancel := context.WithCancel(context.Background())
	b := &Bot{
		cfg: cfg, secret: secret, log: log, m: m, renderer: r,
		app: &githubapi.App{ID: cfg.AppID, PrivateKey: []byte(cfg.PrivateKey), APIURL: cfg.APIURL, Transport: counting{next: http.DefaultTransport, m: m}, Log: log,
			MaxWait: cfg.RateLimitWait, OnWait: func(d time.Duration) { m.rateWait.Add(d.Seconds()) }},
		q:    newQueue(cfg.Concurrency, m),
		seen: webhook.NewDedup(10000, 24*time.Hour),
		base: base, cancel: cancel,
	}
	b.client = func(installation int64, owner, repo string) (gitHub, error) {
		return b.app.Installation(installation, owner, repo)
	}
	if b.operatorRules, err = operatorPolicies(cfg.Policies); err != nil {
		return nil, err
	}
	// A repository's policies run in a child of this program, never in the
	// process holding the App's key.
	sandbox, err := policy.Self(cfg.PolicyMaxMemory)
	if err != nil {
		return nil, err
	}
	// KCL's settings are variables of the environment, as for the
	// action and its Jobs (engine/kcl), read with the others.
	if b.kcl, err = kcl.NewSetup(cfg.kcl(), log); err != nil {
		return nil, fmt.Errorf("KCL settings: %w", err)
	}
	runner := &workflow.Runner{Runtimes: cfg.runtimes(), PolicySandbox: sandbox, KCL: b.kcl, Log: log,
		Store: workflow.StoreConfig{Backend: cfg.Backend, Lease: cfg.Lease}, WaitHeld: cfg.HoldWait, ModuleEnv: cfg.ModuleEnv}
	stacks, err := cfg.executors(runner, m, log)
	if err != nil {
		return nil, err
	}
	b.login, b.work, b.executors, b.actions, b.runner = b.app.Login, workflowWork{runner: runner, stacks: stacks}, stacks, stacks.actions, runner
	b.commands = webhook.NewDedup(10000, 24*time.Hour)
	b.budget = webhook.NewBudget(cfg.MaxUnverifiedBytes, budgetWait)
	m.watchBudget(b.budget)
	if backend.AnswersQueries(cfg.Backend) {
		b.releases = newRunningReleases(cfg.Backend, log)
		m.reg.MustRegister(b.releases)
	}
	b.redeliver = newRedelivery()
	b.ready.Store(true)
	return b, nil
}

// Handler serves /webhook, /healthz, /readyz and /metrics.
func (b *Bot) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/webhook", b.webhook)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !b.ready.Load() {
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /metrics", b.m.handler())
	return mux
}

// Unready makes /readyz answer 503, so that load balancers stop sending
// deliveries; the bot still takes those that come.
func (b *Bot) Unready() { b.ready.Store(false) }

// Drain stops taking work and waits for running jobs up to ctx's deadline;
// past it the jobs are cancelled (their releases end failed, and leases let
// the next run take over).
func (b *Bot) Drain(ctx context.Context) error {
	b.ready.Store(false)
	err := b.q.drain(ctx)
	b.cancel()
	_ = b.kcl.Close()
	if b.releases != nil {
		b.releases.close()
	}
	return err
}

// budgetWait is how long a delivery waits for room among the bodies being
// received before it is answered 503: GitHub gives up on an answer after
// ten seconds, so waiting longer would not save it.
const budgetWait = 5 * time.Second

// webhook answers at once: verified, deduplicated, queued.
func (b *Bot) webhook(w http.ResponseWriter, r *http.Request) {
	d, err := webhook.Receive(w, r, b.secret, b.budget)
	if err != nil {
		status := http.StatusBadRequest
		var we *webhook.Error
		if errors.As(err, &we) {
			status = we.Status
			if we.RetryAfter > 0 {
				w.Header().Set("Retry-After", fmt.Sprint(int(we.RetryAfter.Seconds()+0.5)))
			}
		}
		// The event header of a refused request is anyone's word: as a
		// label it would make a new series per value sent.
		b.m.webhooks.WithLabelValues("unverified", "refused").Inc()
		b.log.Warn("webhook refused", "status", status, "reason", err.Error(), "remote", r.RemoteAddr)
		http.Error(w, err.Error(), status)
		if status == http.StatusServiceUnavailable || status == http.StatusRequestTimeout {
			// Refused for want of room or time, not for what it is:
			// if it was GitHub's, GitHub will not send it again unless
			// asked. (A stranger's request does this as well as
			// GitHub's; the pass it brings comes at most every
			// redeliverGap.)
			b.redeliver.refused()
		}
		return
	}
	if b.seen.Seen(d.ID) {
		b.m.webhooks.WithLabelValues(eventLabel(d.Event), "duplicate").Inc()
		writeJSON(w, http.StatusOK, map[string]string{"result": "duplicate delivery ignored"})
		return
	}
	outcome, err := b.dispatch(d, b.redeliver.askedFor(d.ID))
	if err != nil {
		b.m.webhooks.WithLabelValues(eventLabel(d.Event), "refused").Inc()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.m.webhooks.WithLabelValues(eventLabel(d.Event), outcome).Inc()
	status := http.StatusOK
	if outcome == "accepted" {
		status = http.StatusAccepted
	}
	writeJSON(w, status, map[string]string{"result": outcome})
}

// eventLabel is the event as a metric label: the events the bot handles by
// name, any other as "other". The header is not covered by the signature,
// so whoever holds one signed body could otherwise mint series at will.
func eventLabel(event string) string {
	switch event {
	case "pull_request", "issue_comment", "merge_group", "check_run", "ping", "workflow_run":
		return event
	}
	return "other"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
