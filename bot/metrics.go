package bot

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kusionpr/kusionpr/webhook"
	"github.com/kusionpr/kusionpr/workflow"
)

// metrics are the bot's Prometheus series, in a registry of its own.
type metrics struct {
	reg       *prometheus.Registry
	webhooks  *prometheus.CounterVec
	runs      *prometheus.CounterVec
	durations *prometheus.HistogramVec
	queue     prometheus.Gauge
	apiCalls  *prometheus.CounterVec
	rateLeft  prometheus.Gauge
	rateWait  prometheus.Counter
	// redeliveries counts the deliveries the bot asked GitHub for again.
	redeliveries prometheus.Counter

	// Per executor: stacks handed over, in flight, their results, and the
	// time from the hand-over to the work's start where it runs and to
	// its result.
	dispatched *prometheus.CounterVec
	inFlight   *prometheus.GaugeVec
	results    *prometheus.CounterVec
	toStart    *prometheus.HistogramVec
	toEnd      *prometheus.HistogramVec

	// Drift scans: resources drifted per stack as of the last scan, how
	// long scans take, when the last ended, and how many ran.
	driftResources *prometheus.GaugeVec
	driftDuration  prometheus.Histogram
	driftLast      prometheus.Gauge
	driftScans     *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kusionpr_webhooks_total",
			Help: "Webhook deliveries by event and outcome (accepted, ignored, duplicate, refused)."}, []string{"event", "outcome"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kusionpr_runs_total",
			Help: "Stack runs by stack, command and result."}, []string{"stack", "command", "result"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kusionpr_run_duration_seconds",
			Help: "How long a stack run took.", Buckets: prometheus.ExponentialBuckets(0.5, 2, 12)}, []string{"command"}),
		queue: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kusionpr_queue_depth", Help: "Jobs waiting or running."}),
		apiCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kusionpr_github_api_calls_total",
			Help: "GitHub API requests by status code."}, []string{"code"}),
		rateLeft: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kusionpr_github_rate_limit_remaining",
			Help: "The rate limit GitHub last reported remaining."}),
		rateWait: prometheus.NewCounter(prometheus.CounterOpts{Name: "kusionpr_github_rate_limit_wait_seconds_total",
			Help: "Time GitHub requests waited for GitHub's rate limits (and retried a server error), in all."}),
	}
	m.redeliveries = prometheus.NewCounter(prometheus.CounterOpts{Name: "kusionpr_webhook_redeliveries_total",
		Help: "Deliveries the bot could not take (refused for want of room or time, or sent while no bot listened) that it asked GitHub to make again."})
	m.dispatched = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kusionpr_executor_dispatched_total",
		Help: "Stack runs handed to the executor."}, []string{"executor"})
	m.inFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kusionpr_executor_running",
		Help: "Stack runs handed to the executor and not finished (waiting to start, or running)."}, []string{"executor"})
	m.results = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kusionpr_executor_results_total",
		Help: "Stack runs the executor finished, by result (succeeded, failed, skipped)."}, []string{"executor", "result"})
	m.toStart = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kusionpr_executor_start_seconds",
		Help: "Time from handing a stack run to the executor to its start where it runs.", Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)}, []string{"executor"})
	m.toEnd = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kusionpr_executor_run_seconds",
		Help: "Time from handing a stack run to the executor to its result.", Buckets: prometheus.ExponentialBuckets(0.5, 2, 14)}, []string{"executor"})
	m.driftResources = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kusionpr_drift_resources",
		Help: "Resources of the stack changed outside of a release, as of the last drift scan."}, []string{"repository", "stack"})
	m.driftDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kusionpr_drift_scan_duration_seconds",
		Help: "How long a repository's drift scan took.", Buckets: prometheus.ExponentialBuckets(0.5, 2, 14)})
	m.driftLast = prometheus.NewGauge(prometheus.GaugeOpts{Name: "kusionpr_drift_last_scan_timestamp_seconds",
		Help: "When this replica's last drift scan ended, in Unix seconds."})
	m.driftScans = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kusionpr_drift_scans_total",
		Help: "Drift scans this replica ran, by result."}, []string{"result"})
	m.reg.MustRegister(m.webhooks, m.runs, m.durations, m.queue, m.apiCalls, m.rateLeft, m.rateWait, m.redeliveries,
		m.dispatched, m.inFlight, m.results, m.toStart, m.toEnd,
		m.driftResources, m.driftDuration, m.driftLast, m.driftScans)
	return m
}

// watchBudget shows what the webhook bodies not yet verified hold of the
// budget: near KUSIONPR_MAX_UNVERIFIED_BYTES, deliveries wait, or are
// refused and asked for again.
func (m *metrics) watchBudget(b *webhook.Budget) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kusionpr_webhook_unverified_bytes",
		Help: "Bytes of webhook bodies held before their signature is checked."}, func() float64 { return float64(b.InUse()) }))
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// counting wraps a transport to count GitHub calls and track the rate limit.
type counting struct {
	next http.RoundTripper
	m    *metrics
}

func (c counting) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err != nil {
		c.m.apiCalls.WithLabelValues("error").Inc()
		return resp, err
	}
	c.m.apiCalls.WithLabelValues(strconv.Itoa(resp.StatusCode)).Inc()
	if v := resp.Header.Get("X-RateLimit-Remaining"); v != "" {
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			c.m.rateLeft.Set(n)
		}
	}
	return resp, nil
}

// observed is an executor whose runs the metrics count.
type observed struct {
	next     workflow.StackRunner
	executor string
	m        *metrics
}

func (o observed) Run(ctx context.Context, req workflow.Request) *workflow.StackResult {
	handed := time.Now()
	o.m.dispatched.WithLabelValues(o.executor).Inc()
	o.m.inFlight.WithLabelValues(o.executor).Inc()
	defer o.m.inFlight.WithLabelValues(o.executor).Dec()
	run := o.next.Run(ctx, req)
	if !run.Started.IsZero() {
		// A worker's clock may be a little behind ours.
		o.m.toStart.WithLabelValues(o.executor).Observe(max(run.Started.Sub(handed), 0).Seconds())
	}
	o.m.toEnd.WithLabelValues(o.executor).Observe(time.Since(handed).Seconds())
	result := "succeeded"
	switch {
	case run.Err != nil:
		result = "failed"
	case run.Skipped != "":
		result = "skipped"
	}
	o.m.results.WithLabelValues(o.executor, result).Inc()
	return run
}
