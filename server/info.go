package server

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// infoSections lists INFO's sections in output order; "default", "all"
// and "everything" select them all.
var infoSections = []struct {
	name  string
	write func(s *Server, b *strings.Builder) error
}{
	{"server", (*Server).infoServer},
	{"clients", (*Server).infoClients},
	{"memory", (*Server).infoMemory},
	{"persistence", (*Server).infoPersistence},
	{"stats", (*Server).infoStats},
	{"replication", (*Server).infoReplication},
	{"keyspace", (*Server).infoKeyspace},
	{"lsmgo", (*Server).infoEngine},
}

// cmdInfo implements INFO [section ...]. Unknown sections are ignored, as
// in Redis. The keyspace section counts keys by iterating them, so it
// costs O(keys).
func cmdInfo(c *conn, _ *command, args [][]byte) {
	c.publish() // the commands before INFO in a pipeline count
	want := map[string]bool{}
	for _, a := range args[1:] {
		switch name := strings.ToLower(string(a)); name {
		case "default", "all", "everything":
			for _, sec := range infoSections {
				want[sec.name] = true
			}
		default:
			want[name] = true
		}
	}
	var b strings.Builder
	for _, sec := range infoSections {
		if len(args) > 1 && !want[sec.name] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		if err := sec.write(c.s, &b); err != nil {
			c.replyErr(err)
			return
		}
	}
	c.wr.Verbatim("txt", b.String())
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
	field(b, "redis_mode", "standalone")
	field(b, "lsmgo_engine", "lsmgo")
	field(b, "os", runtime.GOOS+" "+runtime.GOARCH)
	field(b, "arch_bits", 64)
	field(b, "multiplexing_api", "go netpoll")
	field(b, "go_version", runtime.Version())
	field(b, "process_id", os.Getpid())
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
	field(b, "blocked_clients", 0)
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
	field(b, "maxmemory_clients", s.config().MaxMemoryClients)
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
	field(b, "rdb_changes_since_last_save", 0)
	field(b, "rdb_bgsave_in_progress", 0)
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
	field(b, "evicted_clients", s.clientMem.evicted.Load())
	field(b, "keyspace_hits", st.hits.Load())
	field(b, "keyspace_misses", st.misses.Load())
	field(b, "pubsub_channels", s.pubsub.numChannels())
	field(b, "pubsub_patterns", s.pubsub.numPatterns())
	field(b, "client_output_buffer_limit_disconnections", s.pubsub.limitClosed.Load())
	return nil
}

func (s *Server) infoReplication(b *strings.Builder) error {
	b.WriteString("# Replication\r\n")
	field(b, "role", "master")
	field(b, "connected_slaves", 0)
	return nil
}

// infoKeyspace counts keys and expiring keys by iterating the keyspace.
// avg_ttl is reported as 0: it would need every expiry decoded.
func (s *Server) infoKeyspace(b *strings.Builder) error {
	var keys, expires int64
	err := s.ks.scanKeys(s.ks.latest(), nil, nil, func(_ []byte, _ byte, exp bool) bool {
		keys++
		if exp {
			expires++
		}
		return true
	})
	if err != nil {
		return err
	}
	b.WriteString("# Keyspace\r\n")
	if keys > 0 {
		fmt.Fprintf(b, "db0:keys=%d,expires=%d,avg_ttl=0\r\n", keys, expires)
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
