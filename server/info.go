package server

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// infoSections lists INFO's sections in Redis' output order. INFO with
// no argument or "default" prints the sections marked dflt; "all" and
// "everything" print every one.
var infoSections = []struct {
	name  string
	dflt  bool
	write func(s *Server, b *strings.Builder) error
}{
	{"server", true, (*Server).infoServer},
	{"clients", true, (*Server).infoClients},
	{"memory", true, (*Server).infoMemory},
	{"persistence", true, (*Server).infoPersistence},
	{"stats", true, (*Server).infoStats},
	{"replication", true, (*Server).infoReplication},
	{"cpu", true, (*Server).infoCPU},
	{"modules", true, (*Server).infoModules},
	{"commandstats", false, (*Server).infoCommandStats},
	{"errorstats", true, (*Server).infoErrorStats},
	{"latencystats", false, (*Server).infoLatencyStats},
	{"cluster", true, (*Server).infoCluster},
	{"keyspace", true, (*Server).infoKeyspace},
	{"lsmgo", true, (*Server).infoEngine},
}

// cmdInfo implements INFO [section ...]. Unknown sections are ignored, as
// in Redis. The keyspace section counts keys by iterating them, so it
// costs O(keys).
func cmdInfo(c *conn, _ *command, args [][]byte) error {
	c.publish() // the commands before INFO in a pipeline count
	want := map[string]bool{}
	for _, a := range args[1:] {
		switch name := strings.ToLower(string(a)); name {
		case "all", "everything":
			for _, sec := range infoSections {
				want[sec.name] = true
			}
		case "default":
			for _, sec := range infoSections {
				want[sec.name] = want[sec.name] || sec.dflt
			}
		default:
			want[name] = true
		}
	}
	var b strings.Builder
	for _, sec := range infoSections {
		if len(args) > 1 && !want[sec.name] || len(args) == 1 && !sec.dflt {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		if err := sec.write(c.s, &b); err != nil {
			return err
		}
	}
	c.wr.Verbatim("txt", b.String())
	return nil
}

// field writes one "name:value" line.
func field(b *strings.Builder, name string, value any) {
	fmt.Fprintf(b, "%s:%v\r\n", name, value)
}

func (s *Server) infoServer(b *strings.Builder) error {
	cfg := s.config()
	uptime := time.Since(s.startTime)
	exe, _ := os.Executable()
	b.WriteString("# Server\r\n")
	field(b, "redis_version", Version)
	field(b, "lsmgo_version", s.build.Version)
	field(b, "lsmgo_commit", s.build.Commit)
	field(b, "redis_git_sha1", "00000000")
	field(b, "redis_git_dirty", 0)
	field(b, "redis_mode", "standalone")
	field(b, "lsmgo_engine", "lsmgo")
	field(b, "os", runtime.GOOS+" "+runtime.GOARCH)
	field(b, "arch_bits", 64)
	field(b, "multiplexing_api", "go netpoll")
	field(b, "go_version", runtime.Version())
	field(b, "process_id", os.Getpid())
	field(b, "run_id", s.runID)
	field(b, "tcp_port", portOf(s.Addr().String()))
	field(b, "server_time_usec", time.Now().UnixMicro())
	field(b, "uptime_in_seconds", int64(uptime.Seconds()))
	field(b, "uptime_in_days", int64(uptime.Hours()/24))
	field(b, "executable", exe)
	field(b, "config_file", cfg.ConfigFile)
	return nil
}

func portOf(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		return addr[i+1:]
	}
	return addr
}

func (s *Server) infoClients(b *strings.Builder) error {
	b.WriteString("# Clients\r\n")
	field(b, "connected_clients", s.clientCount())
	field(b, "maxclients", s.config().MaxClients)
	field(b, "blocked_clients", s.blocked.blocked.Load()+s.blocked.waits.Load())
	field(b, "tracking_clients", s.tracking.clients.Load())
	return nil
}

func (s *Server) infoMemory(b *strings.Builder) error {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := s.db.Metrics()
	b.WriteString("# Memory\r\n")
	field(b, "used_memory", ms.HeapAlloc)
	field(b, "used_memory_human", humanSize(int64(ms.HeapAlloc)))
	field(b, "used_memory_rss", ms.Sys)
	field(b, "used_memory_rss_human", humanSize(int64(ms.Sys)))
	field(b, "maxmemory", 0)
	field(b, "maxmemory_policy", "noeviction")
	field(b, "mem_allocator", "go")
	field(b, "mem_clients_normal", s.clientMem.total.Load())
	field(b, "maxmemory_clients", s.config().maxMemoryClients())
	field(b, "number_of_cached_scripts", s.scripts.cachedScripts.Load())
	field(b, "lsmgo_memtable_bytes", m.MemTables.Bytes)
	field(b, "lsmgo_block_cache_bytes", m.Cache.Bytes)
	return nil
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

func (s *Server) infoPersistence(b *strings.Builder) error {
	m := s.db.Metrics()
	status := "ok"
	if m.ReadOnly {
		status = "err"
	}
	b.WriteString("# Persistence\r\n")
	field(b, "loading", 0)
	field(b, "async_loading", 0)
	// lsmgo's "save" is a backup (BGSAVE): a checkpoint stored in
	// backup-dir. Changes count engine write batches.
	bi := s.backupInfo()
	field(b, "rdb_changes_since_last_save", bi.changes)
	field(b, "rdb_bgsave_in_progress", boolInt(bi.running))
	field(b, "rdb_last_save_time", bi.lastSave.Unix())
	bgsaveStatus := "ok"
	if !bi.lastOK {
		bgsaveStatus = "err"
	}
	field(b, "rdb_last_bgsave_status", bgsaveStatus)
	field(b, "rdb_last_bgsave_time_sec", bi.lastSeconds)
	field(b, "rdb_current_bgsave_time_sec", bi.curSeconds)
	field(b, "rdb_saves", bi.saves)
	field(b, "aof_enabled", 1)
	field(b, "aof_rewrite_in_progress", 0)
	field(b, "aof_last_write_status", status)
	field(b, "appendfsync", s.config().AppendFsync)
	field(b, "lsmgo_wal_bytes", m.WAL.Bytes)
	field(b, "lsmgo_wal_syncs", m.WAL.Syncs)
	return nil
}

func (s *Server) infoStats(b *strings.Builder) error {
	st := &s.stats
	b.WriteString("# Stats\r\n")
	field(b, "total_connections_received", st.connections.Load())
	field(b, "total_commands_processed", st.commands.Load())
	field(b, "total_net_input_bytes", st.netIn.Load())
	field(b, "total_net_output_bytes", st.netOut.Load())
	field(b, "rejected_connections", st.rejected.Load())
	field(b, "sync_full", s.repl.fullSyncs.Load())
	field(b, "sync_partial_ok", s.repl.resumes.Load())
	field(b, "sync_partial_err", s.repl.refused.Load())
	field(b, "evicted_clients", s.clientMem.evicted.Load())
	field(b, "keyspace_hits", st.hits.Load())
	field(b, "keyspace_misses", st.misses.Load())
	field(b, "pubsub_channels", s.pubsub.numChannels())
	field(b, "pubsub_patterns", s.pubsub.numPatterns())
	keys, items, prefixes := s.trackingStats()
	field(b, "tracking_total_keys", keys)
	field(b, "tracking_total_items", items)
	field(b, "tracking_total_prefixes", prefixes)
	field(b, "client_output_buffer_limit_disconnections", s.pubsub.limitClosed.Load()+s.repl.limitClosed.Load())
	field(b, "migrate_cached_sockets", 0) // MIGRATE dials each time (cmd_migrate.go)
	errs, _ := s.errors.totals()
	field(b, "total_error_replies", errs)
	field(b, "total_command_panics", st.panics.Load())
	denied := &s.acl.log.denied
	field(b, "acl_access_denied_auth", denied[aclDeniedAuth].Load())
	field(b, "acl_access_denied_cmd", denied[aclDeniedCommand].Load())
	field(b, "acl_access_denied_key", denied[aclDeniedKey].Load())
	field(b, "acl_access_denied_channel", denied[aclDeniedChannel].Load())
	return nil
}

// infoCPU reports the process's CPU time from getrusage(2), as Redis
// does. The *_main_thread fields are left out: Go runs commands on every
// thread, so no one thread is the main one.
func (s *Server) infoCPU(b *strings.Builder) error {
	b.WriteString("# CPU\r\n")
	for _, who := range []struct {
		suffix string
		who    int
	}{{"", syscall.RUSAGE_SELF}, {"_children", syscall.RUSAGE_CHILDREN}} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who.who, &ru); err != nil {
			return fmt.Errorf("getrusage: %w", err)
		}
		fmt.Fprintf(b, "used_cpu_sys%s:%d.%06d\r\n", who.suffix, ru.Stime.Sec, ru.Stime.Usec)
		fmt.Fprintf(b, "used_cpu_user%s:%d.%06d\r\n", who.suffix, ru.Utime.Sec, ru.Utime.Usec)
	}
	return nil
}

// infoModules is empty: lsmgo loads no Redis modules.
func (s *Server) infoModules(b *strings.Builder) error {
	b.WriteString("# Modules\r\n")
	return nil
}

// infoCommandStats reports each command that ran at least once, in
// command table order, with Redis' fields: calls that ran, their total
// and mean time in microseconds, calls refused before running, and calls
// that ran and replied with an error.
func (s *Server) infoCommandStats(b *strings.Builder) error {
	b.WriteString("# Commandstats\r\n")
	for _, cmd := range allCommands {
		st := s.cmdStats[cmd.id]
		calls, rejected := st.calls.Load(), st.rejected.Load()
		if calls == 0 && rejected == 0 {
			continue
		}
		usec := float64(st.nanos.Load()) / 1e3
		perCall := 0.0
		if calls > 0 {
			perCall = usec / float64(calls)
		}
		fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			cmd.name, calls, int64(usec), perCall, rejected, st.failures.Load())
	}
	return nil
}

func (s *Server) infoErrorStats(b *strings.Builder) error {
	b.WriteString("# Errorstats\r\n")
	s.errors.write(b)
	return nil
}

// infoLatencyStats reports each command's latency percentiles
// (latency-tracking-info-percentiles) from its latency histogram
// (latencyHist), in microseconds, as Redis prints them.
func (s *Server) infoLatencyStats(b *strings.Builder) error {
	b.WriteString("# Latencystats\r\n")
	ps := s.config().LatencyPercentiles
	for _, cmd := range allCommands {
		h := s.cmdStats[cmd.id].hist.Load()
		if h == nil {
			continue
		}
		counts, total := h.snapshot()
		fmt.Fprintf(b, "latency_percentiles_usec_%s:", cmd.name)
		for i, p := range ps {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "p%s=%.3f", formatPercentile(p), float64(hdrPercentile(counts, total, p))/1000)
		}
		b.WriteString("\r\n")
	}
	return nil
}

// infoCluster says cluster mode is off: lsmgo shards behind a proxy
// instead (doc/scale-out.md).
func (s *Server) infoCluster(b *strings.Builder) error {
	b.WriteString("# Cluster\r\n")
	field(b, "cluster_enabled", 0)
	return nil
}

func (s *Server) infoReplication(b *strings.Builder) error {
	b.WriteString("# Replication\r\n")
	s.writeReplicationInfo(b)
	return nil
}

// infoKeyspace counts keys and expiring keys of each database by
// iterating it. avg_ttl is reported as 0: it would need every expiry
// decoded.
func (s *Server) infoKeyspace(b *strings.Builder) error {
	b.WriteString("# Keyspace\r\n")
	dbs := s.ks.dbs.Load()
	for db := range s.databases {
		var keys, expires int64
		err := s.ks.scanKeys(s.ks.latest(), dbs.ns[db], nil, nil, func(_ []byte, _ byte, exp bool) bool {
			keys++
			if exp {
				expires++
			}
			return true
		})
		if err != nil {
			return err
		}
		if keys > 0 {
			fmt.Fprintf(b, "db%d:keys=%d,expires=%d,avg_ttl=0\r\n", db, keys, expires)
		}
	}
	return nil
}

// infoEngine reports the engine's metrics.
func (s *Server) infoEngine(b *strings.Builder) error {
	m := s.db.Metrics()
	b.WriteString("# Lsmgo\r\n")
	for level, l := range m.Levels {
		fmt.Fprintf(b, "level%d:files=%d,bytes=%d,score=%.2f\r\n", level, l.Files, l.Bytes, l.Score)
	}
	field(b, "memtables", m.MemTables.Count)
	field(b, "memtable_bytes", m.MemTables.Bytes)
	field(b, "wal_bytes", m.WAL.Bytes)
	field(b, "wal_syncs", m.WAL.Syncs)
	field(b, "wal_recovery_dropped_bytes", m.WAL.RecoveryDroppedBytes)
	field(b, "wal_recovery_lost_entries", m.WAL.RecoveryLostEntries)
	field(b, "commit_batches", m.Commits.Batches)
	field(b, "commit_groups", m.Commits.Groups)
	field(b, "flushes", m.Flush.Count)
	field(b, "flush_bytes", m.Flush.BytesWritten)
	field(b, "compactions", m.Compaction.Count)
	field(b, "compaction_moves", m.Compaction.Moves)
	field(b, "compaction_read_bytes", m.Compaction.BytesRead)
	field(b, "compaction_written_bytes", m.Compaction.BytesWritten)
	field(b, "compactions_running", m.Compaction.Running)
	field(b, "write_amplification", fmt.Sprintf("%.2f", m.WriteAmplification()))
	field(b, "write_stalls", m.Stall.Count)
	field(b, "write_stall_usec", m.Stall.Duration.Microseconds())
	field(b, "write_slowdowns", m.Stall.Slowdowns)
	field(b, "cache_hits", m.Cache.Hits)
	field(b, "cache_misses", m.Cache.Misses)
	field(b, "cache_bytes", m.Cache.Bytes)
	field(b, "bloom_negatives", m.Bloom.Negatives)
	field(b, "bloom_positives", m.Bloom.Positives)
	field(b, "snapshots", m.Snapshots)
	field(b, "iterators", m.Iterators)
	field(b, "background_errors", m.BackgroundErrors)
	field(b, "corruptions", m.Corruptions)
	field(b, "read_only", boolInt(m.ReadOnly))
	field(b, "disk_free_bytes", m.Disk.Free)
	field(b, "disk_total_bytes", m.Disk.Total)
	field(b, "disk_nospace_retries", m.Disk.NoSpaceRetries)
	field(b, "disk_nospace_writes", m.Disk.NoSpaceWrites)
	field(b, "writes_refused", m.Disk.WritesRefused)
	field(b, "visible_seq", m.VisibleSeq)
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
