package server

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
)

// writeFile replaces path by renaming a new file over it, as editors do,
// so that a watching server never reads it half written: on a loaded
// machine a reload may fall between the truncation and the write.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestConfigLayers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "lsmgo.toml")
	writeFile(t, file, `
maxclients = 77
timeout = 3
appendfsync = "always"
proto-max-bulk-len = "2mb"
protected-mode = false
`)
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.RegisterFlags(fs)
	if err := fs.Parse([]string{"--config", file, "--maxclients=88", "--addr", "0.0.0.0:1"}); err != nil {
		t.Fatal(err)
	}
	r, err := cfg.resolve()
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "flag beats file", r.MaxClients, 88)
	eq(t, "file beats default", r.Timeout, 3*time.Second)
	eq(t, "appendfsync", r.AppendFsync, "always")
	eq(t, "size units", r.ProtoMaxBulkLen, int64(2<<20))
	eq(t, "protected mode off", r.ProtectedMode, false)
	eq(t, "default kept", r.SlowlogMaxLen, 128)

	if err := fs.Parse([]string{"--appendfsync", "sometimes"}); err == nil {
		t.Error("bad flag value accepted")
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ file, want string }{
		{`nosuch = 1`, `unknown setting "nosuch"`},
		{`maxclients = "many"`, "argument couldn't be parsed into an integer"},
		{`maxclients = 0`, "argument must be between 1 and"},
		{`loglevel = "loud"`, "must be one of the following"},
		{`maxclients = [1, 2]`, "want a string, integer or boolean"},
		{`maxclients = `, "config file"},
	} {
		file := filepath.Join(dir, "c.toml")
		writeFile(t, file, tc.file)
		cfg := DefaultConfig()
		cfg.ConfigFile = file
		if _, err := cfg.resolve(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.file, err, tc.want)
		}
	}
	cfg := DefaultConfig()
	cfg.Addr = "0.0.0.0:9001"
	if _, err := cfg.resolve(); err == nil || !strings.Contains(err.Error(), "without requirepass") {
		t.Errorf("non-loopback without password: %v", err)
	}
	cfg.RequirePass = "pw"
	if _, err := cfg.resolve(); err != nil {
		t.Errorf("non-loopback with password: %v", err)
	}
	for addr, loopback := range map[string]bool{
		"127.0.0.1:1": true, "[::1]:1": true, "localhost:1": true,
		":1": false, "0.0.0.0:1": false, "10.0.0.1:1": false, "bad": false,
	} {
		eq(t, "isLoopbackAddr "+addr, isLoopbackAddr(addr), loopback)
	}
}

func TestParseBound(t *testing.T) {
	for _, tc := range []struct {
		in    string
		units bool
		want  int64
		ok    bool
	}{
		{"10", false, 10, true},
		{"10k", true, 10000, true},
		{"10kb", true, 10240, true},
		{"1GB", true, 1 << 30, true},
		{"3m", true, 3000000, true},
		{"10k", false, 0, false},
		{"-1", false, 0, false},
		{"99999999999gb", true, 0, false},
		{"", false, 0, false},
	} {
		got, err := parseBound(tc.in, 0, 1<<62, tc.units)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseBound(%q, %v) = %d, %v", tc.in, tc.units, got, err)
		}
	}
}

// TestConfigFileReload edits the config file under a running server: live
// settings follow the file, restart-only ones do not, and values set with
// CONFIG SET survive reloads that do not touch them.
func TestConfigFileReload(t *testing.T) {
	file := filepath.Join(t.TempDir(), "lsmgo.toml")
	writeFile(t, file, "slowlog-max-len = 5\nmemtable-size = 1048576\n")
	log := &testutil.SyncBuffer{}
	s := startServer(t, func(c *Config) {
		c.ConfigFile = file
		c.LogOutput = io.MultiWriter(c.LogOutput, log)
	})
	c := newClient(t, s, 3, nil)
	ctx := context.Background()
	eq(t, "from file", c.ConfigGet(ctx, "slowlog-max-len").Val()["slowlog-max-len"], "5")
	if err := c.ConfigSet(ctx, "maxclients", "50").Err(); err != nil {
		t.Fatal(err)
	}

	writeFile(t, file, "slowlog-max-len = 7\nmemtable-size = 2097152\nloglevel = \"warning\"\n")
	deadline := time.Now().Add(10 * time.Second)
	for c.ConfigGet(ctx, "slowlog-max-len").Val()["slowlog-max-len"] != "7" {
		if time.Now().After(deadline) {
			t.Fatal("config file change not applied")
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := c.ConfigGet(ctx, "*").Val()
	eq(t, "restart-only setting unchanged", got["memtable-size"], "1048576")
	eq(t, "CONFIG SET value kept", got["maxclients"], "50")
	eq(t, "loglevel applied", got["loglevel"], "warning")

	// A broken file is refused; the running settings stay.
	writeFile(t, file, "slowlog-max-len = \"x\"\n")
	log.WaitFor(t, "config reload failed")
	eq(t, "after bad file", c.ConfigGet(ctx, "slowlog-max-len").Val()["slowlog-max-len"], "7")
}

func TestStartFailures(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir })
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.HTTPAddr = ""
	cfg.Addr = s.Addr().String() // taken
	cfg.LogOutput = io.Discard
	if _, err := Start(cfg); err == nil {
		t.Error("Start on a busy port succeeded")
	}
	// The failed Start released its engine: the directory opens again.
	cfg.Addr = "127.0.0.1:0"
	s2, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start after failure: %v", err)
	}
	s2.Shutdown(context.Background())
}

// TestSettingUnits checks that every size and duration setting takes the
// same spellings through each of the three ways in: a flag, the TOML file
// (as a string and, for plain numbers, as an integer) and, for live
// settings, CONFIG SET on a running server. Every setting must appear in
// the kinds table, so a new one cannot skip the check.
func TestSettingUnits(t *testing.T) {
	type spelling struct {
		in   string
		want string // CONFIG GET's answer afterwards
	}
	sizes := []spelling{{"2097152", "2097152"}, {"2mb", "2097152"}, {"2MB", "2097152"}, {"2m", "2000000"}, {"3kb", "3072"}, {"3k", "3000"}, {"5000b", "5000"}}
	kinds := map[string][]spelling{
		"proto-max-bulk-len":                sizes,
		"max-multibulk-len":                 sizes,
		"hll-sparse-max-bytes":              sizes,
		"client-query-buffer-limit":         sizes,
		"maxmemory-clients":                 sizes,
		"maxmemory":                         sizes,
		"images-max-bytes":                  sizes,
		"images-resumable-max-bytes":        sizes,
		"images-resumable-bytes-per-client": sizes,
		"images-render-memory":              sizes,
		"images-hot-body-memory":            sizes,
		"memtable-size":                     sizes,
		"cache-size":                        sizes,
		"timeout":                           {{"90", "90"}, {"1m30s", "90"}, {"1500ms", "1.5s"}},
		"shutdown-timeout":                  {{"2", "2"}, {"2s", "2"}, {"1m", "60"}, {"250ms", "250ms"}},
		"slowlog-log-slower-than":           {{"-1", "-1"}, {"2500", "2500"}, {"2ms", "2000"}, {"1s", "1000000"}},
		"busy-reply-threshold":              {{"250", "250"}, {"2s", "2000"}, {"1m", "60000"}},
		"lua-time-limit":                    {{"250", "250"}, {"2s", "2000"}},
		"min-replicas-max-lag":              {{"3", "3"}, {"1m", "60"}},
		"min-slaves-max-lag":                {{"3", "3"}, {"1m", "60"}},
		"repl-backlog-ttl":                  {{"3600", "3600"}, {"1m", "60"}},
		"latency-monitor-threshold":         {{"0", "0"}, {"100", "100"}, {"2s", "2000"}},
		"images-upload-queue-wait":          {{"250", "250"}, {"1s", "1000"}, {"1m", "60000"}},
		"images-min-upload-rate-window":     {{"10", "10"}, {"2m", "120"}, {"1500ms", "1.5s"}},
		"hash-max-listpack-value":           sizes,
		"hash-max-ziplist-value":            sizes,
		"set-max-listpack-value":            sizes,
		"zset-max-listpack-value":           sizes,
		"zset-max-ziplist-value":            sizes,
		"stream-node-max-bytes":             sizes,
		"client-output-buffer-limit": {
			{"pubsub 2mb 1mb 60", "normal 0 0 0 slave 268435456 67108864 60 pubsub 2097152 1048576 60"},
			{"3kb 3k 5", "normal 0 0 0 slave 268435456 67108864 60 pubsub 3072 3000 5"},
			{"normal 0 0 0 replica 1 2 3 PUBSUB 32mb 8mb 60", "normal 0 0 0 slave 1 2 3 pubsub 33554432 8388608 60"},
			{"slave 256mb 64mb 60", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
		},
	}
	other := []string{"addr", "http", "dir", "appendfsync", "protected-mode", "replicaof", "replica-read-only", "masteruser", "masterauth",
		"min-replicas-to-write", "min-slaves-to-write", "replica-priority", "slave-priority", "requirepass", "admin-token",
		"replica-announce-ip", "slave-announce-ip", "replica-announce-port", "slave-announce-port", "replica-announced",
		"maxclients", "event-loop", "slowlog-max-len", "tracking-table-max-keys", "loglevel", "max-concurrent-compactions", "appendonly", "save", "databases",
		"images", "image-tokens", "images-anonymous", "images-base-url", "images-upload-rate",
		"images-upload-burst", "images-token-upload-rate", "images-token-upload-burst", "images-cors-origins",
		"images-uploads-per-client", "images-min-upload-rate", "images-fetch-private", "images-resumable-per-client",
		"images-render-max-side", "images-render-secret",
		"blob-store", "s3-access-key", "s3-secret-key", "backup-dir",
		"hash-max-listpack-entries", "hash-max-ziplist-entries", "list-max-listpack-size", "list-max-ziplist-size",
		"list-compress-depth", "set-max-intset-entries", "set-max-listpack-entries", "zset-max-listpack-entries",
		"zset-max-ziplist-entries", "stream-node-max-entries", "activerehashing", "lazyfree-lazy-eviction",
		"lazyfree-lazy-expire", "lazyfree-lazy-server-del", "lazyfree-lazy-user-del", "lazyfree-lazy-user-flush",
		"notify-keyspace-events", "aclfile", "acl-pubsub-default", "acllog-max-len",
		"latency-tracking", "latency-tracking-info-percentiles", "maxmemory-policy", "lfu-log-factor", "lfu-decay-time",
		"slaveof", "slave-read-only", "daemonize", "port", "bind", "maxmemory-samples", "repl-backlog-size", "key-load-delay", "rdb-key-save-delay",
		"loading-process-events-interval-bytes", "use-exit-on-panic"}
	for _, st := range settings {
		if _, ok := kinds[st.name]; !ok && !slices.Contains(other, st.name) {
			t.Errorf("setting %q is in neither the unit table nor the list of settings without units", st.name)
		}
	}

	s := startServer(t, nil)
	client := newClient(t, s, 2, nil)
	ctx := context.Background()
	dir := t.TempDir()
	for name, spellings := range kinds {
		st := lookupSetting(name)
		for _, sp := range spellings {
			// A flag.
			cfg := DefaultConfig()
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			cfg.RegisterFlags(fs)
			if err := fs.Parse([]string{"--" + name, sp.in}); err != nil {
				t.Errorf("--%s %s: %v", name, sp.in, err)
			} else if r, err := cfg.resolve(); err != nil {
				t.Errorf("--%s %s: %v", name, sp.in, err)
			} else {
				eq(t, "flag --"+name+" "+sp.in, st.get(&r), sp.want)
			}
			// The config file, quoted, and bare where TOML allows.
			toml := []string{fmt.Sprintf("%s = %q\n", name, sp.in)}
			if _, err := strconv.ParseInt(sp.in, 10, 64); err == nil {
				toml = append(toml, fmt.Sprintf("%s = %s\n", name, sp.in))
			}
			for _, line := range toml {
				file := filepath.Join(dir, "c.toml")
				writeFile(t, file, line)
				cfg := DefaultConfig()
				cfg.ConfigFile = file
				if r, err := cfg.resolve(); err != nil {
					t.Errorf("config file %q: %v", line, err)
				} else {
					eq(t, "config file "+line, st.get(&r), sp.want)
				}
			}
			// CONFIG SET, for the settings that change live.
			if st.live {
				if err := client.ConfigSet(ctx, name, sp.in).Err(); err != nil {
					t.Errorf("CONFIG SET %s %s: %v", name, sp.in, err)
				} else {
					eq(t, "CONFIG SET "+name+" "+sp.in, client.ConfigGet(ctx, name).Val()[name], sp.want)
				}
			}
		}
		// Junk is refused the same way everywhere.
		cfg := DefaultConfig()
		if err := st.set(&cfg, "12parsecs"); err == nil {
			t.Errorf("%s accepted 12parsecs", name)
		}
		if st.live {
			if err := client.ConfigSet(ctx, name, "12parsecs").Err(); err == nil {
				t.Errorf("CONFIG SET %s 12parsecs accepted", name)
			}
		}
	}
}
