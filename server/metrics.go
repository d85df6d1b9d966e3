package server

import (
	"strconv"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are one server's Prometheus metrics, in a registry of its own:
// two servers in one process never share numbers. The per-command metrics
// are read from the server's cmdStats at scrape time (see stats.go).
type metrics struct {
	registry                        *prometheus.Registry
	protocolErrors, unknownCommands prometheus.Counter
}

func newMetrics(s *Server) *metrics {
	m := &metrics{registry: prometheus.NewRegistry()}
	m.protocolErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "lsmgo_protocol_errors_total", Help: "Connections closed for malformed RESP.",
	})
	m.unknownCommands = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "lsmgo_unknown_commands_total", Help: "Commands rejected as unknown.",
	})
	m.registry.MustRegister(m.protocolErrors, m.unknownCommands,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		serverCollector{s})
	return m
}

// serverCollector reports gauges and counters that live elsewhere (the
// engine's Metrics, the server's own atomics) at scrape time.
type serverCollector struct{ s *Server }

// engineMetric maps one field of lsmgo.Metrics to a Prometheus metric.
type engineMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(*lsmgo.Metrics) float64
}

func gauge(name, help string, f func(*lsmgo.Metrics) float64) engineMetric {
	return engineMetric{prometheus.NewDesc(name, help, nil, nil), prometheus.GaugeValue, f}
}

func counter(name, help string, f func(*lsmgo.Metrics) float64) engineMetric {
	return engineMetric{prometheus.NewDesc(name, help, nil, nil), prometheus.CounterValue, f}
}

var engineMetrics = []engineMetric{
	gauge("lsmgo_engine_memtables", "Memtables, the mutable one included.", func(m *lsmgo.Metrics) float64 { return float64(m.MemTables.Count) }),
	gauge("lsmgo_engine_memtable_bytes", "Bytes in memtables.", func(m *lsmgo.Metrics) float64 { return float64(m.MemTables.Bytes) }),
	counter("lsmgo_engine_wal_bytes_total", "Bytes written to the WAL.", func(m *lsmgo.Metrics) float64 { return float64(m.WAL.Bytes) }),
	counter("lsmgo_engine_wal_syncs_total", "WAL fsyncs.", func(m *lsmgo.Metrics) float64 { return float64(m.WAL.Syncs) }),
	counter("lsmgo_engine_wal_recovery_dropped_bytes_total", "WAL bytes the last Open dropped after a torn or damaged tail.", func(m *lsmgo.Metrics) float64 { return float64(m.WAL.RecoveryDroppedBytes) }),
	counter("lsmgo_engine_wal_recovery_lost_entries_total", "Entries the last Open dropped that were not a torn tail of the last WAL: lost or damaged data.", func(m *lsmgo.Metrics) float64 { return float64(m.WAL.RecoveryLostEntries) }),
	counter("lsmgo_engine_commit_batches_total", "Committed batches.", func(m *lsmgo.Metrics) float64 { return float64(m.Commits.Batches) }),
	counter("lsmgo_engine_commit_groups_total", "Commit groups (batches per group = group commit factor).", func(m *lsmgo.Metrics) float64 { return float64(m.Commits.Groups) }),
	counter("lsmgo_engine_flushes_total", "Memtable flushes.", func(m *lsmgo.Metrics) float64 { return float64(m.Flush.Count) }),
	counter("lsmgo_engine_flush_bytes_total", "Bytes written by flushes.", func(m *lsmgo.Metrics) float64 { return float64(m.Flush.BytesWritten) }),
	counter("lsmgo_engine_compactions_total", "Compactions that rewrote data.", func(m *lsmgo.Metrics) float64 { return float64(m.Compaction.Count) }),
	counter("lsmgo_engine_compaction_moves_total", "Compactions that moved a file down a level.", func(m *lsmgo.Metrics) float64 { return float64(m.Compaction.Moves) }),
	counter("lsmgo_engine_compaction_read_bytes_total", "Bytes read by compactions.", func(m *lsmgo.Metrics) float64 { return float64(m.Compaction.BytesRead) }),
	counter("lsmgo_engine_compaction_written_bytes_total", "Bytes written by compactions.", func(m *lsmgo.Metrics) float64 { return float64(m.Compaction.BytesWritten) }),
	gauge("lsmgo_engine_compactions_running", "Compactions in progress.", func(m *lsmgo.Metrics) float64 { return float64(m.Compaction.Running) }),
	counter("lsmgo_engine_write_stalls_total", "Writes that waited for flush or compaction.", func(m *lsmgo.Metrics) float64 { return float64(m.Stall.Count) }),
	counter("lsmgo_engine_write_stall_seconds_total", "Time writes spent stalled.", func(m *lsmgo.Metrics) float64 { return m.Stall.Duration.Seconds() }),
	counter("lsmgo_engine_write_slowdowns_total", "Commit groups delayed to let compaction catch up.", func(m *lsmgo.Metrics) float64 { return float64(m.Stall.Slowdowns) }),
	counter("lsmgo_engine_cache_hits_total", "Block cache hits.", func(m *lsmgo.Metrics) float64 { return float64(m.Cache.Hits) }),
	counter("lsmgo_engine_cache_misses_total", "Block cache misses.", func(m *lsmgo.Metrics) float64 { return float64(m.Cache.Misses) }),
	gauge("lsmgo_engine_cache_bytes", "Bytes in the block cache.", func(m *lsmgo.Metrics) float64 { return float64(m.Cache.Bytes) }),
	gauge("lsmgo_engine_cache_blocks", "Blocks in the block cache.", func(m *lsmgo.Metrics) float64 { return float64(m.Cache.Blocks) }),
	counter("lsmgo_engine_bloom_negatives_total", "Table reads a bloom filter avoided.", func(m *lsmgo.Metrics) float64 { return float64(m.Bloom.Negatives) }),
	counter("lsmgo_engine_bloom_positives_total", "Bloom filter probes that let a read through.", func(m *lsmgo.Metrics) float64 { return float64(m.Bloom.Positives) }),
	gauge("lsmgo_engine_snapshots", "Open snapshots.", func(m *lsmgo.Metrics) float64 { return float64(m.Snapshots) }),
	gauge("lsmgo_engine_iterators", "Open iterators.", func(m *lsmgo.Metrics) float64 { return float64(m.Iterators) }),
	counter("lsmgo_engine_background_errors_total", "Background I/O errors.", func(m *lsmgo.Metrics) float64 { return float64(m.BackgroundErrors) }),
	counter("lsmgo_engine_corruptions_total", "Reads and compactions that met damaged data.", func(m *lsmgo.Metrics) float64 { return float64(m.Corruptions) }),
	gauge("lsmgo_engine_read_only", "1 when a background error made the engine read-only.", func(m *lsmgo.Metrics) float64 {
		if m.ReadOnly {
			return 1
		}
		return 0
	}),
	gauge("lsmgo_engine_disk_free_bytes", "Free bytes on the data directory's filesystem (0: unknown).", func(m *lsmgo.Metrics) float64 { return float64(m.Disk.Free) }),
	gauge("lsmgo_engine_disk_total_bytes", "Size of the data directory's filesystem (0: unknown).", func(m *lsmgo.Metrics) float64 { return float64(m.Disk.Total) }),
	counter("lsmgo_engine_nospace_retries_total", "Flushes and compactions retried after the disk filled up.", func(m *lsmgo.Metrics) float64 { return float64(m.Disk.NoSpaceRetries) }),
	counter("lsmgo_engine_nospace_writes_total", "Writes refused for lack of disk space.", func(m *lsmgo.Metrics) float64 { return float64(m.Disk.NoSpaceWrites) }),
	gauge("lsmgo_engine_writes_refused", "1 while writes fail or may fail (INFO writes_refused says why).", func(m *lsmgo.Metrics) float64 {
		if m.Disk.WritesRefused != "" {
			return 1
		}
		return 0
	}),
}

var (
	levelFilesDesc  = prometheus.NewDesc("lsmgo_engine_level_files", "Tables per LSM level.", []string{"level"}, nil)
	levelBytesDesc  = prometheus.NewDesc("lsmgo_engine_level_bytes", "Bytes per LSM level.", []string{"level"}, nil)
	levelScoreDesc  = prometheus.NewDesc("lsmgo_engine_level_score", "Compaction score per level (>= 1: due).", []string{"level"}, nil)
	connectedDesc   = prometheus.NewDesc("lsmgo_connected_clients", "Connected clients.", nil, nil)
	connectionsDesc = prometheus.NewDesc("lsmgo_connections_total", "Connections accepted.", nil, nil)
	rejectedDesc    = prometheus.NewDesc("lsmgo_rejected_connections_total", "Connections refused (maxclients or shutdown).", nil, nil)
	evictedDesc     = prometheus.NewDesc("lsmgo_evicted_clients_total", "Clients closed because their buffers would pass maxmemory-clients.", nil, nil)
	clientMemDesc   = prometheus.NewDesc("lsmgo_client_buffer_bytes", "Bytes held by all clients' query buffers (bounded by maxmemory-clients).", nil, nil)
	netInDesc       = prometheus.NewDesc("lsmgo_net_input_bytes_total", "Bytes read from clients.", nil, nil)
	netOutDesc      = prometheus.NewDesc("lsmgo_net_output_bytes_total", "Bytes written to clients.", nil, nil)
	panicsDesc      = prometheus.NewDesc("lsmgo_command_panics_total", "Command handlers that panicked; each closed its connection (a bug: please report).", nil, nil)

	callsDesc    = prometheus.NewDesc("lsmgo_commands_total", "Commands executed, by command.", []string{"cmd"}, nil)
	failuresDesc = prometheus.NewDesc("lsmgo_command_errors_total", "Commands that replied with an error, by command.", []string{"cmd"}, nil)
	latencyDesc  = prometheus.NewDesc("lsmgo_command_duration_seconds",
		"Command execution time, by command; a pipelined command's time starts when the one before it ends, and queued pipelined SETs count from the start of their batch.",
		[]string{"cmd"}, nil)
)

func (sc serverCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, em := range engineMetrics {
		ch <- em.desc
	}
	for _, d := range []*prometheus.Desc{levelFilesDesc, levelBytesDesc, levelScoreDesc,
		connectedDesc, connectionsDesc, rejectedDesc, evictedDesc, clientMemDesc, netInDesc, netOutDesc, panicsDesc,
		callsDesc, failuresDesc, latencyDesc} {
		ch <- d
	}
}

func (sc serverCollector) Collect(ch chan<- prometheus.Metric) {
	s := sc.s
	m := s.db.Metrics()
	for _, em := range engineMetrics {
		ch <- prometheus.MustNewConstMetric(em.desc, em.kind, em.value(m))
	}
	for level, l := range m.Levels {
		lv := strconv.Itoa(level)
		ch <- prometheus.MustNewConstMetric(levelFilesDesc, prometheus.GaugeValue, float64(l.Files), lv)
		ch <- prometheus.MustNewConstMetric(levelBytesDesc, prometheus.GaugeValue, float64(l.Bytes), lv)
		ch <- prometheus.MustNewConstMetric(levelScoreDesc, prometheus.GaugeValue, l.Score, lv)
	}
	ch <- prometheus.MustNewConstMetric(connectedDesc, prometheus.GaugeValue, float64(s.clientCount()))
	ch <- prometheus.MustNewConstMetric(connectionsDesc, prometheus.CounterValue, float64(s.stats.connections.Load()))
	ch <- prometheus.MustNewConstMetric(rejectedDesc, prometheus.CounterValue, float64(s.stats.rejected.Load()))
	ch <- prometheus.MustNewConstMetric(evictedDesc, prometheus.CounterValue, float64(s.clientMem.evicted.Load()))
	ch <- prometheus.MustNewConstMetric(clientMemDesc, prometheus.GaugeValue, float64(s.clientMem.total.Load()))
	ch <- prometheus.MustNewConstMetric(netInDesc, prometheus.CounterValue, float64(s.stats.netIn.Load()))
	ch <- prometheus.MustNewConstMetric(netOutDesc, prometheus.CounterValue, float64(s.stats.netOut.Load()))
	ch <- prometheus.MustNewConstMetric(panicsDesc, prometheus.CounterValue, float64(s.stats.panics.Load()))
	for _, cmd := range allCommands {
		collectCommand(ch, cmd, s.cmdStats[cmd.id])
	}
}

// collectCommand reports one command's counters and latency histogram. The
// histogram's count is the sum of its buckets, read once, so that a scrape
// racing with publishers still yields a consistent histogram.
func collectCommand(ch chan<- prometheus.Metric, cmd *command, st *cmdStats) {
	ch <- prometheus.MustNewConstMetric(callsDesc, prometheus.CounterValue, float64(st.calls.Load()), cmd.name)
	ch <- prometheus.MustNewConstMetric(failuresDesc, prometheus.CounterValue, float64(st.failures.Load()), cmd.name)
	buckets := make(map[float64]uint64, len(latencyBounds))
	var count uint64
	for i := range st.buckets {
		count += st.buckets[i].Load()
		if i < len(latencyBounds) {
			buckets[float64(latencyBounds[i])/1e9] = count
		}
	}
	ch <- prometheus.MustNewConstHistogram(latencyDesc, count, float64(st.nanos.Load())/1e9, buckets, cmd.name)
}
