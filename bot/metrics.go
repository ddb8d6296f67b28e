package bot

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
	m.reg.MustRegister(m.webhooks, m.runs, m.durations, m.queue, m.apiCalls, m.rateLeft, m.rateWait)
	return m
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
