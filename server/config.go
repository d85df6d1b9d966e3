package server

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/lsmgo-dev/lsmgo/server/imgbed"
	"github.com/lsmgo-dev/lsmgo/server/internal/hll"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// Config is the server's configuration. DefaultConfig returns the
// defaults; Start resolves the final values from this Config, then the
// TOML file named by ConfigFile, then Overrides (the command-line flags),
// each layer winning over the one before.
//
// Every field that is a setting has a name (the flag, the TOML key and the
// CONFIG GET/SET parameter, all the same) listed in doc/server.md. Settings
// marked live may change while the server runs, through CONFIG SET or an
// edit of the config file; the others need a restart.
type Config struct {
	// Addr is the RESP listen address ("addr"); default 127.0.0.1:9001.
	Addr string
	// HTTPAddr is the HTTP listen address for /metrics, /healthz and
	// /debug/ ("http"); empty disables HTTP. Default 127.0.0.1:8080.
	HTTPAddr string
	// Dir is the data directory ("dir"); default ./lsmgo-data.
	Dir string
	// AppendFsync is "always", "everysec" or "no" ("appendfsync"), mapped
	// to lsmgo.SyncAlways, SyncInterval(time.Second) and SyncNone. Every
	// mode writes the WAL before replying. Default everysec.
	AppendFsync string
	// ReplicaOf is "host port" of the primary this server follows, empty
	// for a primary ("replicaof", live; REPLICAOF sets it too).
	ReplicaOf string
	// ReplicaReadOnly makes a replica refuse client writes
	// ("replica-read-only", live); default true.
	ReplicaReadOnly bool
	// MasterUser and MasterAuth are the user and password a replica
	// AUTHs with to its primary before it asks for the stream
	// ("masteruser", "masterauth", live: used at the next connection).
	// Without MasterAuth it sends no AUTH; without MasterUser it AUTHs as
	// the default user.
	MasterUser, MasterAuth string
	// MinReplicasToWrite refuses writes on a primary with fewer
	// replicas that acknowledged within MinReplicasMaxLag
	// ("min-replicas-to-write", "min-replicas-max-lag" in seconds, and
	// their min-slaves-* names; live). Default 0 (off) and 10 s, as in
	// Redis.
	MinReplicasToWrite int
	MinReplicasMaxLag  time.Duration
	// ReplBacklogSize and ReplBacklogTTL bound the replication backlog
	// kept on disk: the WAL files kept after their flush (and the blob
	// files only they keep), from which a replica resumes, also after a
	// restart of this server
	// ("repl-backlog-size" in bytes, "repl-backlog-ttl" in seconds, 0:
	// no age bound; live). Default 256 MiB and 3600 s
	// (doc/replication.md, "Backlog").
	ReplBacklogSize int64
	ReplBacklogTTL  time.Duration
	// ReplicaPriority is what INFO shows Sentinel as slave_priority:
	// lower is promoted first, 0 never ("replica-priority", or
	// "slave-priority"; live). Default 100.
	ReplicaPriority int
	// ReplicaAnnounceIP and ReplicaAnnouncePort are the address a
	// replica tells its primary to show for it (INFO's slaveN, ROLE),
	// which Sentinel and FAILOVER then use: for a replica behind NAT or
	// a port forward ("replica-announce-ip", "replica-announce-port", or
	// slave-announce-*; live, used at the next connection). Empty and 0:
	// the address the primary sees and the port this server listens on.
	ReplicaAnnounceIP   string
	ReplicaAnnouncePort int
	// ReplicaAnnounced is INFO's replica_announced: Sentinel leaves a
	// replica that says 0 out of SENTINEL REPLICAS ("replica-announced",
	// live). Default true.
	ReplicaAnnounced bool
	// ProtectedMode refuses to listen on a non-loopback address without
	// RequirePass ("protected-mode"); default true.
	ProtectedMode bool
	// RequirePass is the password of the default user; empty means no
	// authentication ("requirepass", live).
	RequirePass string
	// ACLFile is where ACL SAVE writes the users and ACL LOAD (and the
	// start) reads them, in Redis' format ("aclfile"); empty: users live
	// only until the server stops.
	ACLFile string
	// Users are Redis' `user` directives, "NAME RULES..." each, in ACL
	// SETUSER's rules (the config file's "user" list; acl_config.go):
	// the users the server starts with, besides the default user, whose
	// own directive replaces it. Not with ACLFile, as in Redis.
	Users []string
	// userOrigins names the file and line of each of Users read from the
	// config file, for its errors.
	userOrigins []string
	// ACLPubsubDefault is the channels a new user may use:
	// "resetchannels" (none, Redis 7's default) or "allchannels"
	// ("acl-pubsub-default", live).
	ACLPubsubDefault string
	// ACLLogMaxLen is how many ACL LOG entries are kept ("acllog-max-len",
	// live).
	ACLLogMaxLen int
	// AdminToken, when set, lets non-loopback HTTP clients reach
	// /debug/pprof/ and /debug/vars with "Authorization: Bearer <token>"
	// ("admin-token", live).
	AdminToken string
	// BackupDir is where BGSAVE, SAVE and POST /admin/backup store
	// backups: a directory, or s3://bucket/prefix?endpoint=URL&region=R
	// with keys from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or the
	// shared AWS files ("backup-dir", live). Empty (the default) turns
	// those commands off.
	BackupDir string
	// Images serves the image host (package imgbed) on the HTTP address
	// ("images"); default true. While it is on, /debug/ requires
	// AdminToken from every client, loopback included: behind a reverse
	// proxy on the same host every visitor is loopback.
	Images bool
	// ImageTokens are the image upload tokens, "name:secret[:admin]"
	// separated by commas ("image-tokens", live); AdminToken is an admin
	// image token too.
	ImageTokens string
	// ImagesAnonymous says who may upload without a token: "auto" (only
	// through a loopback HTTP address), "yes" or "no" ("images-anonymous").
	ImagesAnonymous string
	// ImagesBaseURL is the public prefix of image links, such as
	// "https://img.example.com"; empty: the request's Host
	// ("images-base-url").
	ImagesBaseURL string
	// ImagesMaxBytes bounds one uploaded image ("images-max-bytes");
	// default 20 MiB.
	ImagesMaxBytes int64
	// ImagesUploadRate and ImagesUploadBurst limit anonymous image uploads
	// per IP address: uploads per second, and the batch that passes at
	// once ("images-upload-rate", negative disables the limit;
	// "images-upload-burst"). ImagesTokenUploadRate and
	// ImagesTokenUploadBurst do the same per token
	// ("images-token-upload-rate", "images-token-upload-burst").
	// Defaults: imgbed's (5 and 120; 20 and 500).
	ImagesUploadRate       int
	ImagesUploadBurst      int
	ImagesTokenUploadRate  int
	ImagesTokenUploadBurst int
	// ImagesUploadsPerClient bounds the upload slots one client holds at
	// once ("images-uploads-per-client", 0: imgbed's default); ImagesUploadQueueWait is how long
	// an upload waits for a slot before a 503 ("images-upload-queue-wait");
	// ImagesMinUploadRate, in bytes per second, cuts off with 408 a body
	// slower than that for ImagesMinUploadRateWindow
	// ("images-min-upload-rate", negative disables,
	// "images-min-upload-rate-window"). Defaults: imgbed's.
	// ImagesCORSOrigins are the origins, separated by commas ("*": any),
	// whose browser scripts may call the image API
	// ("images-cors-origins"); empty: none.
	ImagesCORSOrigins string
	// ImagesResumableMaxBytes bounds one resumable (tus) image upload
	// ("images-resumable-max-bytes"; default 1 GiB). ImagesFetchPrivate
	// lets uploads by URL fetch from loopback and private addresses
	// ("images-fetch-private"; default no).
	ImagesResumableMaxBytes int64
	// ImagesResumablePerClient and ImagesResumableBytesPerClient bound
	// one client's unfinished resumable uploads, in number and declared
	// bytes ("images-resumable-per-client",
	// "images-resumable-bytes-per-client"; -1: unlimited). Defaults:
	// imgbed's.
	ImagesResumablePerClient      int
	ImagesResumableBytesPerClient int64
	ImagesFetchPrivate            bool
	ImagesUploadsPerClient        int
	ImagesUploadQueueWait         time.Duration
	ImagesMinUploadRate           int
	ImagesMinUploadRateWindow     time.Duration
	// ImagesRenderMemory bounds the memory of the image renders running
	// at once, each counted at its estimated peak
	// ("images-render-memory"); ImagesRenderMaxSide bounds w and h of a
	// render ("images-render-max-side"); ImagesRenderSecret, when set,
	// makes renders with h, fit or format need a signature
	// ("images-render-secret"). Defaults: imgbed's (320 MiB, 2048, none).
	ImagesRenderMemory  int64
	ImagesRenderMaxSide int
	ImagesRenderSecret  string
	// ImagesHotBodyMemory bounds the bytes of small originals and
	// thumbnails kept in memory for the plain GETs that read them often
	// ("images-hot-body-memory"; 0: none). Default: imgbed's (32 MiB).
	ImagesHotBodyMemory int64
	// BlobStore is where the image host keeps the bytes of new images:
	// empty for the data directory, or an S3 bucket as
	// "s3://bucket/prefix?endpoint=URL&region=R" ("blob-store"; see
	// doc/imgbed.md). Image metadata always stays in the data directory.
	BlobStore string
	// S3AccessKey and S3SecretKey are the credentials of an s3://
	// blob-store or backup-dir ("s3-access-key", "s3-secret-key"); empty:
	// the AWS environment variables, then the shared AWS files.
	S3AccessKey, S3SecretKey string
	// MaxClients bounds simultaneous clients ("maxclients", live);
	// default 10000.
	MaxClients int
	// Databases is how many databases SELECT offers ("databases");
	// default 16, as in Redis. Lowering it hides the databases past it,
	// keeping their keys; raising it again shows them.
	Databases int
	// Timeout closes a client that has not completed a command for this
	// long; 0 disables ("timeout", seconds, live). A command that is still
	// arriving does not count as activity, so a client trickling bytes is
	// closed too.
	Timeout time.Duration
	// ProtoMaxBulkLen is the longest argument and the longest string
	// value ("proto-max-bulk-len", live for new connections); default
	// 512 MiB.
	ProtoMaxBulkLen int64
	// HLLSparseMaxBytes is the largest sparse HyperLogLog value, header
	// included, before PFADD converts it to the dense encoding
	// ("hll-sparse-max-bytes", live); default 3000, as in Redis.
	HLLSparseMaxBytes int
	// MaxMultibulkLen is the most arguments one command may have
	// ("max-multibulk-len", live for new connections); default 1048576.
	MaxMultibulkLen int64
	// QueryBufferLimit closes a client whose unfinished command exceeds
	// it ("client-query-buffer-limit", live); default 1 GiB.
	QueryBufferLimit int64
	// SlowlogSlowerThan is the execution time from which a command enters
	// the slow log; negative disables it, zero logs every command
	// ("slowlog-log-slower-than", microseconds, live). Default 10ms.
	SlowlogSlowerThan time.Duration
	// LatencyMonitorThreshold is the execution time from which a command
	// is recorded as a latency event ("latency-monitor-threshold",
	// milliseconds, live); zero, the default, turns the monitor off.
	LatencyMonitorThreshold time.Duration
	// LatencyTracking keeps a latency histogram per command for LATENCY
	// HISTOGRAM and INFO latencystats ("latency-tracking", live); default
	// on, as in Redis.
	LatencyTracking bool
	// MaxMemoryPolicy is Redis' eviction policy ("maxmemory-policy",
	// live); default noeviction. lsmgo evicts nothing: an LFU policy
	// makes OBJECT FREQ count accesses (lfu.go), and OBJECT IDLETIME
	// refuses under one, as in Redis.
	MaxMemoryPolicy string
	// LFULogFactor and LFUDecayTime shape the LFU counters ("lfu-log-
	// factor", "lfu-decay-time" in minutes, live); defaults 10 and 1.
	LFULogFactor, LFUDecayTime int
	// LatencyPercentiles are the percentiles INFO latencystats
	// reports ("latency-tracking-info-percentiles", live); default 50,
	// 99 and 99.9, as in Redis.
	LatencyPercentiles []float64
	// TrackingTableMaxKeys bounds the keys client-side caching tracks
	// ("tracking-table-max-keys", live; 0: no bound); default 1,000,000,
	// as in Redis.
	TrackingTableMaxKeys int
	// SlowlogMaxLen is how many slow log entries are kept
	// ("slowlog-max-len", live); default 128.
	SlowlogMaxLen int
	// LogLevel is debug, verbose, notice, warning or nothing ("loglevel",
	// live); default notice.
	LogLevel string
	// MaxConcurrentCompactions bounds the engine's compaction workers
	// ("max-concurrent-compactions"); 0 means the engine default. It
	// changes live.
	MaxConcurrentCompactions int
	// MemTableSize is the engine memtable size in bytes ("memtable-size");
	// 0 means the engine default.
	MemTableSize int
	// CacheSize is the engine block cache budget in bytes ("cache-size");
	// 0 means the engine default.
	CacheSize int64
	// MaxMemoryClients bounds the bytes all clients' query buffers may
	// hold together ("maxmemory-clients", live); past it the biggest
	// clients are closed first. 0 disables the bound. Default 1 GiB.
	// MaxMemoryClientsPercent, when not 0, replaces it by that percentage
	// of maxmemory ("maxmemory-clients" given as "N%", as in Redis; with
	// maxmemory 0 there is no bound).
	MaxMemoryClients        int64
	MaxMemoryClientsPercent int
	// PubsubBufferLimit bounds the messages a subscriber has not read
	// yet ("client-output-buffer-limit", pubsub class, live): past Hard,
	// or past Soft for longer than SoftTime, the subscriber is closed.
	// Default 32 MiB, 8 MiB for 60 s, as in Redis.
	PubsubBufferLimit outputLimit
	// ReplicaBufferLimit bounds what a primary holds for a replica that
	// has not taken it: the batches committed since its position
	// ("client-output-buffer-limit", replica or slave class, live;
	// repllimit.go). Default 256 MiB, 64 MiB for 60 s, as in Redis.
	ReplicaBufferLimit outputLimit
	// EventLoop serves plain request/reply clients from one goroutine
	// over epoll instead of a goroutine each ("event-loop", restart;
	// Linux only; loop_linux.go). Default off.
	EventLoop bool
	// ShutdownTimeout bounds a graceful shutdown ("shutdown-timeout",
	// seconds or a duration such as 500ms, live): clients still busy when
	// it passes are cut off, pending pipelines are dropped, and the engine
	// closes. Default 30s.
	ShutdownTimeout time.Duration
	// BusyReplyThreshold is how long a script runs before other clients
	// get BUSY replies and SCRIPT KILL may stop it
	// ("busy-reply-threshold", or its old name "lua-time-limit", in
	// milliseconds, live). Default 5 s, as in Redis.
	BusyReplyThreshold time.Duration
	// NotifyKeyspaceEvents selects the keyspace events published through
	// Pub/Sub ("notify-keyspace-events", Redis' class letters, live;
	// notify.go). Default none.
	NotifyKeyspaceEvents notifyFlags

	// NoEffect holds the values of the settings lsmgo accepts for Redis
	// clients without acting on them (config_noeffect.go).
	NoEffect noEffectValues

	// ConfigFile names a TOML file of settings; the server reloads the
	// live settings when it changes. Empty means none.
	ConfigFile string
	// boundPort is the port the RESP listener got, which CONFIG GET port
	// answers; 0 before it is bound.
	boundPort int

	// Overrides maps setting names to values that win over the file, as
	// command-line flags do; RegisterFlags fills it.
	Overrides map[string]string
	// LogOutput receives the server's and the engine's logs; default
	// os.Stderr.
	LogOutput io.Writer
	// FS is the engine's filesystem; nil means the operating system's.
	// Tests pass a fault-injecting one.
	FS vfs.FS
}

// DefaultConfig returns the defaults, which match Redis 7 where Redis has
// the same setting.
func DefaultConfig() Config {
	return Config{
		Addr:                          "127.0.0.1:9001",
		HTTPAddr:                      "127.0.0.1:8080",
		Dir:                           "./lsmgo-data",
		AppendFsync:                   "everysec",
		ProtectedMode:                 true,
		ReplicaReadOnly:               true,
		MinReplicasMaxLag:             10 * time.Second,
		ReplBacklogSize:               256 << 20,
		ReplBacklogTTL:                time.Hour,
		ReplicaPriority:               100,
		ReplicaAnnounced:              true,
		MaxClients:                    10000,
		Databases:                     16,
		ProtoMaxBulkLen:               512 << 20,
		MaxMultibulkLen:               1024 * 1024,
		HLLSparseMaxBytes:             hll.DefaultSparseMaxBytes,
		QueryBufferLimit:              1 << 30,
		SlowlogSlowerThan:             10 * time.Millisecond,
		SlowlogMaxLen:                 128,
		LatencyTracking:               true,
		MaxMemoryPolicy:               "noeviction",
		LFULogFactor:                  10,
		LFUDecayTime:                  1,
		LatencyPercentiles:            []float64{50, 99, 99.9},
		TrackingTableMaxKeys:          1_000_000,
		ACLPubsubDefault:              "resetchannels",
		ACLLogMaxLen:                  128,
		LogLevel:                      "notice",
		ShutdownTimeout:               30 * time.Second,
		BusyReplyThreshold:            5 * time.Second,
		MaxMemoryClients:              1 << 30,
		PubsubBufferLimit:             outputLimit{Hard: 32 << 20, Soft: 8 << 20, SoftTime: 60 * time.Second},
		ReplicaBufferLimit:            outputLimit{Hard: 256 << 20, Soft: 64 << 20, SoftTime: 60 * time.Second},
		Images:                        true,
		ImagesAnonymous:               "auto",
		ImagesMaxBytes:                imgbed.DefaultMaxBytes,
		ImagesResumableMaxBytes:       imgbed.DefaultResumableMaxBytes,
		ImagesRenderMemory:            imgbed.DefaultRenderMemory,
		ImagesRenderMaxSide:           imgbed.DefaultRenderMaxSide,
		ImagesHotBodyMemory:           imgbed.DefaultHotBodyBytes,
		ImagesUploadRate:              imgbed.DefaultUploadRate,
		ImagesUploadBurst:             imgbed.DefaultUploadBurst,
		ImagesTokenUploadRate:         imgbed.DefaultTokenUploadRate,
		ImagesTokenUploadBurst:        imgbed.DefaultTokenUploadBurst,
		ImagesUploadQueueWait:         imgbed.DefaultUploadQueueWait,
		ImagesMinUploadRate:           imgbed.DefaultMinUploadRate,
		ImagesMinUploadRateWindow:     imgbed.DefaultMinUploadRateWindow,
		ImagesResumablePerClient:      imgbed.DefaultResumablePerClient,
		ImagesResumableBytesPerClient: imgbed.DefaultResumableBytesPerClient,
	}
}

// setting is one named configuration parameter. The same table drives the
// flags, the config file and CONFIG GET/SET, so the three never disagree.
type setting struct {
	name  string
	usage string
	// live settings may change while the server runs.
	live bool
	// fixed settings exist for client compatibility (redis-benchmark
	// asks for "save" and "appendonly"); they cannot be set at all.
	fixed bool
	// secret settings hold credentials: CONFIG GET shows redactedMarker
	// instead of a set value, and the slow log hides the value a CONFIG
	// SET gave them.
	secret bool
	// noEffect settings are Redis' that lsmgo accepts and reads back
	// but does not act on (config_noeffect.go).
	noEffect bool
	// hidden settings answer CONFIG GET by name only (config_noeffect.go).
	hidden bool
	get    func(*Config) string
	set    func(*Config, string) error
}

var settings = append([]*setting{
	stringSetting("addr", "RESP listen address", false, func(c *Config) *string { return &c.Addr }, nil),
	stringSetting("http", "HTTP listen address for /metrics, /healthz and /debug/ (empty disables)", false,
		func(c *Config) *string { return &c.HTTPAddr }, nil),
	stringSetting("dir", "data directory", false, func(c *Config) *string { return &c.Dir }, nonEmpty),
	stringSetting("appendfsync", "WAL fsync policy: always, everysec or no", false,
		func(c *Config) *string { return &c.AppendFsync }, oneOf("everysec", "always", "no")),
	stringSetting("replicaof", "host and port of the primary to replicate (empty: this server is a primary)", true,
		func(c *Config) *string { return &c.ReplicaOf }, checkReplicaOf),
	stringSetting("slaveof", "the old name of replicaof", true,
		func(c *Config) *string { return &c.ReplicaOf }, checkReplicaOf),
	boolSetting("replica-read-only", "refuse client writes while a replica", true,
		func(c *Config) *bool { return &c.ReplicaReadOnly }),
	boolSetting("slave-read-only", "the old name of replica-read-only", true,
		func(c *Config) *bool { return &c.ReplicaReadOnly }),
	stringSetting("masteruser", "ACL user a replica authenticates as to its primary (empty: the default user)", true,
		func(c *Config) *string { return &c.MasterUser }, nil),
	secret(stringSetting("masterauth", "password a replica authenticates with to its primary (empty: none)", true,
		func(c *Config) *string { return &c.MasterAuth }, nil)),
	boolSetting("protected-mode", "refuse a non-loopback addr without requirepass", false,
		func(c *Config) *bool { return &c.ProtectedMode }),
	secret(stringSetting("requirepass", "password clients must AUTH with (empty: none)", true,
		func(c *Config) *string { return &c.RequirePass }, nil)),
	stringSetting("aclfile", "file of ACL users in Redis' format, read at start and by ACL LOAD, written by ACL SAVE", false,
		func(c *Config) *string { return &c.ACLFile }, nil),
	stringSetting("acl-pubsub-default", "channels a new ACL user may use: resetchannels or allchannels", true,
		func(c *Config) *string { return &c.ACLPubsubDefault }, oneOf("resetchannels", "allchannels")),
	intSetting("acllog-max-len", "entries ACL LOG keeps", true, 0, math.MaxInt32,
		func(c *Config) *int { return &c.ACLLogMaxLen }),
	secret(stringSetting("admin-token", "bearer token that opens /debug/ to non-loopback HTTP clients", true,
		func(c *Config) *string { return &c.AdminToken }, nil)),
	intSetting("maxclients", "maximum simultaneous clients", true, 1, math.MaxInt32,
		func(c *Config) *int { return &c.MaxClients }),
	boolSetting("event-loop", "serve plain request/reply clients from one epoll loop instead of a goroutine each (Linux)", false,
		func(c *Config) *bool { return &c.EventLoop }),
	durationSetting("timeout", "close clients idle for this many seconds (0: never)", true, time.Second, 0,
		func(c *Config) *time.Duration { return &c.Timeout }),
	sizeSetting("proto-max-bulk-len", "longest argument or string value in bytes", true, 1, math.MaxInt64,
		func(c *Config) *int64 { return &c.ProtoMaxBulkLen }),
	sizeSetting("hll-sparse-max-bytes", "largest sparse HyperLogLog in bytes before it turns dense", true, 0, math.MaxInt32,
		func(c *Config) *int { return &c.HLLSparseMaxBytes }),
	sizeSetting("max-multibulk-len", "most arguments in one command", true, 1, math.MaxInt64,
		func(c *Config) *int64 { return &c.MaxMultibulkLen }),
	maxMemoryClientsSetting(),
	outputLimitSetting(),
	sizeSetting("client-query-buffer-limit", "largest unfinished command a client may send, in bytes", true, 1024, math.MaxInt64,
		func(c *Config) *int64 { return &c.QueryBufferLimit }),
	durationSetting("slowlog-log-slower-than", "slow log threshold in microseconds (negative: off)", true, time.Microsecond, math.MinInt64,
		func(c *Config) *time.Duration { return &c.SlowlogSlowerThan }),
	durationSetting("latency-monitor-threshold", "latency monitor threshold in milliseconds (0: off)", true, time.Millisecond, 0,
		func(c *Config) *time.Duration { return &c.LatencyMonitorThreshold }),
	boolSetting("latency-tracking", "keep a latency histogram per command (LATENCY HISTOGRAM, INFO latencystats)", true,
		func(c *Config) *bool { return &c.LatencyTracking }),
	percentilesSetting(),
	maxMemoryPolicySetting(),
	intSetting("lfu-log-factor", "how slowly LFU counters grow (OBJECT FREQ)", true, 0, math.MaxInt32,
		func(c *Config) *int { return &c.LFULogFactor }),
	intSetting("lfu-decay-time", "minutes an LFU counter takes to lose one (0: never)", true, 0, math.MaxInt32,
		func(c *Config) *int { return &c.LFUDecayTime }),
	intSetting("slowlog-max-len", "slow log entries kept", true, 0, math.MaxInt32,
		func(c *Config) *int { return &c.SlowlogMaxLen }),
	intSetting("tracking-table-max-keys", "keys client-side caching tracks at most (0: no bound)", true, 0, math.MaxInt32,
		func(c *Config) *int { return &c.TrackingTableMaxKeys }),
	stringSetting("loglevel", "debug, verbose, notice, warning or nothing", true,
		func(c *Config) *string { return &c.LogLevel }, oneOf("debug", "verbose", "notice", "warning", "nothing")),
	intSetting("max-concurrent-compactions", "engine compaction workers (0: engine default)", true, 0, 1024,
		func(c *Config) *int { return &c.MaxConcurrentCompactions }),
	sizeSetting("memtable-size", "engine memtable size in bytes (0: engine default)", false, 0, math.MaxInt32,
		func(c *Config) *int { return &c.MemTableSize }),
	sizeSetting("cache-size", "engine block cache bytes (0: engine default)", false, 0, math.MaxInt64,
		func(c *Config) *int64 { return &c.CacheSize }),
	durationSetting("shutdown-timeout", "how long shutdown waits for busy clients before cutting them off, in seconds", true, time.Second, 0,
		func(c *Config) *time.Duration { return &c.ShutdownTimeout }),
	durationSetting("busy-reply-threshold", "how long a script runs before other clients get BUSY, in milliseconds", true, time.Millisecond, 0,
		func(c *Config) *time.Duration { return &c.BusyReplyThreshold }),
	durationSetting("lua-time-limit", "the old name of busy-reply-threshold", true, time.Millisecond, 0,
		func(c *Config) *time.Duration { return &c.BusyReplyThreshold }),
	stringSetting("backup-dir", "where BGSAVE and POST /admin/backup store backups: a directory or s3://bucket/prefix?endpoint=URL (empty: off)", true,
		func(c *Config) *string { return &c.BackupDir }, nil),
	boolSetting("images", "serve the image host on the HTTP address", false,
		func(c *Config) *bool { return &c.Images }),
	secret(stringSetting("image-tokens", "image upload tokens, name:secret[:admin] separated by commas", true,
		func(c *Config) *string { return &c.ImageTokens }, checkImageTokens)),
	stringSetting("images-anonymous", "who may upload images without a token: auto (loopback HTTP address), yes or no", false,
		func(c *Config) *string { return &c.ImagesAnonymous }, oneOf("auto", "yes", "no")),
	stringSetting("images-base-url", "public prefix of image links (empty: the request's Host)", false,
		func(c *Config) *string { return &c.ImagesBaseURL }, nil),
	sizeSetting("images-max-bytes", "largest image upload in bytes", false, 1, math.MaxInt64,
		func(c *Config) *int64 { return &c.ImagesMaxBytes }),
	sizeSetting("images-resumable-max-bytes", "largest resumable (tus) image upload in bytes", false, 1, math.MaxInt64,
		func(c *Config) *int64 { return &c.ImagesResumableMaxBytes }),
	intSetting("images-resumable-per-client", "unfinished resumable (tus) image uploads one client may hold (-1: unlimited)", false, -1, math.MaxInt32,
		func(c *Config) *int { return &c.ImagesResumablePerClient }),
	sizeSetting("images-resumable-bytes-per-client", "declared bytes of one client's unfinished resumable (tus) image uploads (-1: unlimited)", false, -1, math.MaxInt64,
		func(c *Config) *int64 { return &c.ImagesResumableBytesPerClient }),
	boolSetting("images-fetch-private", "let image uploads by URL fetch from loopback, private and link-local addresses", false,
		func(c *Config) *bool { return &c.ImagesFetchPrivate }),
	intSetting("images-upload-rate", "anonymous image uploads per second per IP address (negative: unlimited)", false, -1, math.MaxInt32,
		func(c *Config) *int { return &c.ImagesUploadRate }),
	intSetting("images-upload-burst", "anonymous image uploads one IP address may send at once", false, 1, math.MaxInt32,
		func(c *Config) *int { return &c.ImagesUploadBurst }),
	intSetting("images-token-upload-rate", "image uploads per second per token (negative: unlimited)", false, -1, math.MaxInt32,
		func(c *Config) *int { return &c.ImagesTokenUploadRate }),
	intSetting("images-token-upload-burst", "image uploads one token may send at once", false, 1, math.MaxInt32,
		func(c *Config) *int { return &c.ImagesTokenUploadBurst }),
	stringSetting("images-cors-origins", "origins whose browser scripts may call the image API, separated by commas (*: any; empty: none)", false,
		func(c *Config) *string { return &c.ImagesCORSOrigins }, nil),
	intSetting("images-uploads-per-client", "upload slots one image client (token or address) may hold at once (0: a sixteenth of the 64 slots)", false, 0, math.MaxInt32,
		func(c *Config) *int { return &c.ImagesUploadsPerClient }),
	durationSetting("images-upload-queue-wait", "how long an image upload waits for a slot before a 503 with Retry-After, in milliseconds", false, time.Millisecond, 0,
		func(c *Config) *time.Duration { return &c.ImagesUploadQueueWait }),
	intSetting("images-min-upload-rate", "bytes per second below which an image upload body is cut off with 408 (negative: off)", false, -1, math.MaxInt32,
		func(c *Config) *int { return &c.ImagesMinUploadRate }),
	durationSetting("images-min-upload-rate-window", "how long an image upload may stay below images-min-upload-rate, in seconds", false, time.Second, 1,
		func(c *Config) *time.Duration { return &c.ImagesMinUploadRateWindow }),
	sizeSetting("images-render-memory", "memory the image renders running at once may use, each counted at its estimated peak", false, 1, math.MaxInt64,
		func(c *Config) *int64 { return &c.ImagesRenderMemory }),
	intSetting("images-render-max-side", "largest width or height of an image render (?w=, ?h=)", false, 16, 1<<14,
		func(c *Config) *int { return &c.ImagesRenderMaxSide }),
	sizeSetting("images-hot-body-memory", "memory for the bodies of small images and thumbnails that GETs read often (0: none)", false, 0, math.MaxInt64,
		func(c *Config) *int64 { return &c.ImagesHotBodyMemory }),
	secret(stringSetting("images-render-secret", "key that signs image render links with h, fit or format (empty: unsigned links accepted)", false,
		func(c *Config) *string { return &c.ImagesRenderSecret }, nil)),
	stringSetting("blob-store", "where image bytes go: empty (the data directory) or s3://bucket/prefix?endpoint=URL&region=R", false,
		func(c *Config) *string { return &c.BlobStore }, imgbed.CheckBlobStore),
	secret(stringSetting("s3-access-key", "access key of an s3:// blob-store (empty: AWS_ACCESS_KEY_ID, then ~/.aws files)", false,
		func(c *Config) *string { return &c.S3AccessKey }, nil)),
	secret(stringSetting("s3-secret-key", "secret key of an s3:// blob-store (empty: AWS_SECRET_ACCESS_KEY, then ~/.aws files)", false,
		func(c *Config) *string { return &c.S3SecretKey }, nil)),
	notifySetting(),
	fixedSetting("appendonly", "yes"),
	fixedSetting("daemonize", "no"),
	portSetting(),
	bindSetting(),
	intSetting("databases", "number of databases (SELECT 0 … databases-1)", false, 1, maxDatabases,
		func(c *Config) *int { return &c.Databases }),
}, append(append(replicaSettings(), replBacklogSettings()...), noEffectSettings()...)...)

func lookupSetting(name string) *setting {
	for _, s := range settings {
		if s.name == name {
			return s
		}
	}
	return nil
}

func stringSetting(name, usage string, live bool, field func(*Config) *string, check func(string) error) *setting {
	return &setting{name: name, usage: usage, live: live,
		get: func(c *Config) string { return *field(c) },
		set: func(c *Config, v string) error {
			if check != nil {
				if err := check(v); err != nil {
					return err
				}
			}
			*field(c) = v
			return nil
		}}
}

func boolSetting(name, usage string, live bool, field func(*Config) *bool) *setting {
	return &setting{name: name, usage: usage, live: live,
		get: func(c *Config) string { return yesNo(*field(c)) },
		set: func(c *Config, v string) error {
			switch strings.ToLower(v) {
			case "yes":
				*field(c) = true
			case "no":
				*field(c) = false
			default:
				return errors.New("argument must be 'yes' or 'no'")
			}
			return nil
		}}
}

func intSetting(name, usage string, live bool, lo, hi int64, field func(*Config) *int) *setting {
	return &setting{name: name, usage: usage, live: live,
		get: func(c *Config) string { return strconv.Itoa(*field(c)) },
		set: func(c *Config, v string) error {
			n, err := parseBound(v, lo, hi, false)
			if err == nil {
				*field(c) = int(n)
			}
			return err
		}}
}

// sizeSetting is a byte count (or any count) that accepts Redis' memory
// units: 1k = 1000, 1kb = 1024, and so on up to gb. Flags, the config
// file and CONFIG SET all reach it, so every size takes the same spellings.
func sizeSetting[T int | int64](name, usage string, live bool, lo, hi int64, field func(*Config) *T) *setting {
	return &setting{name: name, usage: usage, live: live,
		get: func(c *Config) string { return strconv.FormatInt(int64(*field(c)), 10) },
		set: func(c *Config, v string) error {
			n, err := parseBound(v, lo, hi, true)
			if err == nil {
				*field(c) = T(n)
			}
			return err
		}}
}

// durationSetting is a duration. A plain integer counts unit, as Redis
// spells its timeouts; a Go duration ("1m30s", "250ms") is accepted too.
// Reads give the integer count of unit, which is what Redis tools expect,
// unless the value is not a whole number of units.
func durationSetting(name, usage string, live bool, unit time.Duration, lo int64, field func(*Config) *time.Duration) *setting {
	return &setting{name: name, usage: usage, live: live,
		get: func(c *Config) string {
			if d := *field(c); d%unit != 0 {
				return d.String()
			}
			return strconv.FormatInt(int64(*field(c)/unit), 10)
		},
		set: func(c *Config, v string) error {
			d, err := parseDuration(v, unit, lo)
			if err == nil {
				*field(c) = d
			}
			return err
		}}
}

func fixedSetting(name, value string) *setting {
	return &setting{name: name, fixed: true,
		get: func(*Config) string { return value },
		set: func(*Config, string) error { return errImmutable }}
}

// redactedMarker stands in for a secret: CONFIG GET shows it for a set
// secret setting, and the slow log for a password or secret argument.
// Redis uses the same words for the arguments it hides.
const redactedMarker = "(redacted)"

var errImmutable = errors.New("can't set immutable config")

func nonEmpty(v string) error {
	if v == "" {
		return errors.New("argument must not be empty")
	}
	return nil
}

func oneOf(values ...string) func(string) error {
	return func(v string) error {
		if !slices.Contains(values, v) {
			return fmt.Errorf("argument(s) must be one of the following: %s", strings.Join(values, ", "))
		}
		return nil
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// parseBound parses a decimal integer within [lo, hi]; withUnits accepts
// Redis' memory suffixes.
func parseBound(v string, lo, hi int64, withUnits bool) (int64, error) {
	mul := int64(1)
	if withUnits {
		lower := strings.ToLower(v)
		for _, u := range []struct {
			suffix string
			mul    int64
		}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1}} {
			if strings.HasSuffix(lower, u.suffix) {
				v, mul = v[:len(v)-len(u.suffix)], u.mul
				break
			}
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, errors.New("argument couldn't be parsed into an integer")
	}
	if n > 0 && n > math.MaxInt64/mul || n < 0 && n < math.MinInt64/mul {
		return 0, errors.New("argument must be a memory value")
	}
	n *= mul
	if n < lo || n > hi {
		return 0, boundError(lo, hi)
	}
	return n, nil
}

func boundError(lo, hi int64) error {
	return fmt.Errorf("argument must be between %d and %d inclusive", lo, hi)
}

// parseDuration parses an integer count of unit, at least lo, or a Go
// duration string of at least lo units.
func parseDuration(v string, unit time.Duration, lo int64) (time.Duration, error) {
	if n, err := parseBound(v, lo, math.MaxInt64/int64(unit), false); err == nil {
		return time.Duration(n) * unit, nil
	} else if _, numErr := strconv.ParseInt(v, 10, 64); numErr == nil {
		return 0, err // a number out of range: say so, not "not a duration"
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("argument must be an integer count of %v or a duration such as 1m30s", unit)
	}
	if int64(d/unit) < lo {
		return 0, fmt.Errorf("argument must be at least %d (in units of %v)", lo, unit)
	}
	return d, nil
}

// RegisterFlags defines one flag per setting on fs, plus --config. Parsed
// values land in c.Overrides and c.ConfigFile, so that Start can layer
// them over the config file; the defaults shown are c's current values,
// secrets redacted.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.ConfigFile, "config", c.ConfigFile, "TOML config `file`; live settings reload when it changes")
	for _, s := range settings {
		if s.fixed || s.hidden {
			continue
		}
		fs.Var(&settingFlag{cfg: c, s: s, def: s.shown(c)}, s.name, s.usage)
	}
}

// settingFlag records a flag's value as an override.
type settingFlag struct {
	cfg *Config
	s   *setting
	def string
}

func (f *settingFlag) String() string { return f.def }

func (f *settingFlag) Set(v string) error {
	var probe Config
	if err := f.s.set(&probe, v); err != nil {
		return err
	}
	if f.cfg.Overrides == nil {
		f.cfg.Overrides = map[string]string{}
	}
	f.cfg.Overrides[f.s.name] = v
	return nil
}

// resolve layers the config file and the overrides over c and checks the
// result.
func (c Config) resolve() (Config, error) {
	r := c
	if r.ConfigFile != "" {
		f, err := readConfigFile(r.ConfigFile)
		if err != nil {
			return r, err
		}
		if err := r.apply(f.values, "config file "+r.ConfigFile); err != nil {
			return r, err
		}
		if f.users != nil {
			r.Users, r.userOrigins = f.users, f.userOrigins
		}
	}
	if err := r.apply(r.Overrides, "flag"); err != nil {
		return r, err
	}
	return r, r.validate()
}

// apply sets each named value, in name order so that errors are stable.
func (c *Config) apply(values map[string]string, origin string) error {
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		s := lookupSetting(name)
		if s == nil {
			return fmt.Errorf("%s: unknown setting %q", origin, name)
		}
		if err := s.set(c, values[name]); err != nil {
			return fmt.Errorf("%s: %s: %w", origin, name, err)
		}
	}
	return nil
}

// configFile is what a config file holds: settings, spelled as CONFIG
// SET takes them, and user directives with the file and line of each.
type configFile struct {
	values             map[string]string
	users, userOrigins []string
}

// readConfigFile reads a flat TOML table of settings. Numbers and booleans
// become the strings CONFIG SET would take; "user" is a string or a list
// of strings, Redis' user directives.
func readConfigFile(path string) (configFile, error) {
	var f configFile
	data, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("config file %s: %w", path, err)
	}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return f, fmt.Errorf("config file %s: %w", path, err)
	}
	f.values = make(map[string]string, len(raw))
	for k, v := range raw {
		if k == "user" {
			if f.users, err = tomlStrings(v); err != nil {
				return f, fmt.Errorf("config file %s: user: %w", path, err)
			}
			for _, line := range userLines(string(data), f.users) {
				f.userOrigins = append(f.userOrigins, fmt.Sprintf("config file %s:%d", path, line))
			}
			continue
		}
		s, ok := tomlSettingValue(v)
		if !ok {
			return f, fmt.Errorf("config file %s: %s: want a string, integer or boolean, got %T", path, k, v)
		}
		f.values[k] = s
	}
	return f, nil
}

// tomlStrings reads a string or a list of strings.
func tomlStrings(v any) ([]string, error) {
	switch v := v.(type) {
	case string:
		return []string{v}, nil
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("want a list of strings, got a %T in it", e)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a string or a list of strings, got %T", v)
}

// tomlSettingValue spells a decoded TOML value as CONFIG SET takes it.
func tomlSettingValue(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case int64:
		return strconv.FormatInt(v, 10), true
	case bool:
		return yesNo(v), true
	}
	return "", false
}

// validate checks what single settings cannot: Redis' protected mode,
// and the user directives, which cannot come with an aclfile.
func (c *Config) validate() error {
	if len(c.Users) > 0 {
		if c.ACLFile != "" {
			return fmt.Errorf("user and aclfile: %s", errUsersAndACLFile)
		}
		if _, err := parseConfigUsers(c.Users, c.userOrigins, c.ACLPubsubDefault == "allchannels"); err != nil {
			return err
		}
	}
	if c.ProtectedMode && c.RequirePass == "" && !isLoopbackAddr(c.Addr) {
		return fmt.Errorf("refusing to listen on non-loopback address %q without requirepass (set requirepass, or protected-mode no)", c.Addr)
	}
	return nil
}

// isLoopbackAddr reports whether a listen address accepts only local
// clients. An empty host listens on every interface.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// slogLevel maps Redis' log levels onto slog's.
func slogLevel(level string) slog.Level {
	switch level {
	case "debug", "verbose":
		return slog.LevelDebug
	case "warning":
		return slog.LevelWarn
	case "nothing":
		return slog.LevelError + 4
	}
	return slog.LevelInfo
}
