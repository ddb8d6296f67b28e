package bot

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kusionpr/kusionpr/backend"
)

// runningReleases reports, at each scrape, the releases of the bot's store
// that have not ended, from one query of its database: how many, how long
// each has run and how long since its holder last showed it was alive
// (past the lease it is abandoned, and the next apply of its stack takes
// over). The object stores could tell only by listing every project, so
// the bot asks a store that answers queries (PostgreSQL) alone.
type runningReleases struct {
	url string
	log *slog.Logger

	mu    sync.Mutex
	store *backend.Store // opened at the first scrape, kept

	count, running, silent *prometheus.Desc
}

// scrapeTimeout bounds a scrape's query: Prometheus's default timeout is
// 10 s, and a scrape that waits on a busy database should fail alone.
const scrapeTimeout = 5 * time.Second

func newRunningReleases(url string, log *slog.Logger) *runningReleases {
	labels := []string{"project", "workspace", "stack"}
	return &runningReleases{url: url, log: log,
		count: prometheus.NewDesc("kusionpr_releases_running",
			"Releases in the store that have not ended: applying or destroying now, or abandoned by a holder that died.", nil, nil),
		running: prometheus.NewDesc("kusionpr_release_running_seconds",
			"How long each release that has not ended has run.", labels, nil),
		silent: prometheus.NewDesc("kusionpr_release_silent_seconds",
			"How long since each release that has not ended last showed its holder alive; past the lease, it is abandoned.", labels, nil),
	}
}

func (c *runningReleases) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.count
	ch <- c.running
	ch <- c.silent
}

func (c *runningReleases) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	store, err := c.open(ctx)
	if err != nil {
		c.log.Warn("metrics: open the release store", "error", err.Error())
		return
	}
	rels, _, err := store.Query(ctx, backend.ReleaseQuery{Running: true})
	if err != nil {
		c.log.Warn("metrics: query the running releases", "error", err.Error())
		return
	}
	now := time.Now()
	ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(len(rels)))
	for _, r := range rels {
		ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, now.Sub(r.CreateTime).Seconds(), r.Project, r.Workspace, r.Stack)
		ch <- prometheus.MustNewConstMetric(c.silent, prometheus.GaugeValue, now.Sub(backend.LastSign(r)).Seconds(), r.Project, r.Workspace, r.Stack)
	}
}

func (c *runningReleases) open(ctx context.Context) (*backend.Store, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store == nil {
		s, err := backend.Open(ctx, c.url)
		if err != nil {
			return nil, err
		}
		c.store = s
	}
	return c.store, nil
}

func (c *runningReleases) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store != nil {
		_ = c.store.Close()
		c.store = nil
	}
}
