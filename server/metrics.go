package server

import (
	"net/http"
	"sync"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicefeed/sluice/feed"
)

// Metrics are the server's Prometheus metrics: gRPC handling (calls,
// codes, handling times), rows and bytes streamed per table, open streams,
// planning time, and the engine's reads and cache hits.
type Metrics struct {
	registry    *prometheus.Registry
	grpc        *grpcprom.ServerMetrics
	rows        *prometheus.CounterVec
	bytes       *prometheus.CounterVec
	openStreams prometheus.Gauge
	planSeconds prometheus.Histogram
	// cacheHits, cacheMisses and cacheBytes are the decode cache's.
	cacheHits, cacheMisses prometheus.Counter
	cacheBytes             prometheus.Gauge
	// retention is sluice_consumer_retention_left_seconds.
	retention *prometheus.GaugeVec
	// retentionMu guards retentionSeen: the consumers of the last
	// retention check, by table and consumer.
	retentionMu   sync.Mutex
	retentionSeen map[string]prometheus.Labels
}

// NewMetrics creates the metrics, with the engine's totals (nil: none) and
// the Go runtime's.
func NewMetrics(engine *feed.Engine) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		grpc: grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(
			grpcprom.WithHistogramBuckets([]float64{0.001, 0.01, 0.1, 0.5, 1, 5, 30, 120, 600}))),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_rows_streamed_total",
			Help: "Change rows streamed, per table."}, []string{"table"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_bytes_streamed_total",
			Help: "Arrow IPC body bytes streamed, per table."}, []string{"table"}),
		openStreams: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_open_streams",
			Help: "Streaming calls running."}),
		planSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sluice_plan_seconds",
			Help: "Time to plan a change window.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_decode_cache_hits_total",
			Help: "Reads of a window or full state served from another stream's decode of it."}),
		cacheMisses: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_decode_cache_misses_total",
			Help: "Reads of a window or full state that decoded it (one per fill of the decode cache)."}),
		cacheBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_decode_cache_bytes",
			Help: "Bytes of encoded batches the decode cache holds."}),
		retention: newRetentionMetric(),
	}
	m.registry.MustRegister(m.grpc, m.rows, m.bytes, m.openStreams, m.planSeconds, m.cacheHits, m.cacheMisses,
		m.cacheBytes, m.retention,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if engine != nil {
		stat := func(name, help string, v func(feed.Stats) int64) {
			m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
				func() float64 { return float64(v(engine.Stats())) }))
		}
		stat("sluice_files_read_total", "Data files read.", func(s feed.Stats) int64 { return s.FilesRead })
		stat("sluice_row_groups_read_total", "Row groups read by snapshots that delete rows.",
			func(s feed.Stats) int64 { return s.RowGroupsRead })
		stat("sluice_rows_decoded_total", "Rows decoded from data files.", func(s feed.Stats) int64 { return s.RowsDecoded })
		stat("sluice_plan_cache_hits_total", "Snapshot plans served from the cache.",
			func(s feed.Stats) int64 { return s.PlanCacheHits })
		stat("sluice_plan_cache_misses_total", "Snapshot plans read from manifests.",
			func(s feed.Stats) int64 { return s.PlanCacheMisses })
		stat("sluice_table_load_failures_total", "Loads of a table's metadata from the catalog that failed.",
			func(s feed.Stats) int64 { return s.TableLoadFailures })
		m.registry.MustRegister(tableLoads{engine})
	}
	return m
}

// tableLoadsDesc describes sluice_table_loads_total.
var tableLoadsDesc = prometheus.NewDesc("sluice_table_loads_total",
	"Loads of a table's metadata from the catalog, per table (the follow streams and watches of a table share "+
		"about one per poll interval).", []string{"table"}, nil)

// tableLoads collects the engine's catalog loads per table.
type tableLoads struct{ engine *feed.Engine }

func (tableLoads) Describe(ch chan<- *prometheus.Desc) { ch <- tableLoadsDesc }

func (c tableLoads) Collect(ch chan<- prometheus.Metric) {
	for table, n := range c.engine.TableLoads() {
		ch <- prometheus.MustNewConstMetric(tableLoadsDesc, prometheus.CounterValue, float64(n), table)
	}
}

// Register adds a collector of metrics kept elsewhere (the tables'
// backend verdicts); it panics on a metric already registered.
func (m *Metrics) Register(c prometheus.Collector) {
	m.registry.MustRegister(c)
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

func (m *Metrics) streamed(table string, rows, bytes int64) {
	if m == nil {
		return
	}
	m.rows.WithLabelValues(table).Add(float64(rows))
	m.bytes.WithLabelValues(table).Add(float64(bytes))
}

func (m *Metrics) decodeCacheHit() {
	if m != nil {
		m.cacheHits.Inc()
	}
}

func (m *Metrics) decodeCacheMiss() {
	if m != nil {
		m.cacheMisses.Inc()
	}
}

func (m *Metrics) decodeCacheBytes(n int64) {
	if m != nil {
		m.cacheBytes.Set(float64(n))
	}
}
