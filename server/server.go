package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/imgbed"
	"github.com/lsmgo-dev/lsmgo/server/internal/httpfront"
	"github.com/lsmgo-dev/lsmgo/server/internal/luascript"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// Version is the Redis version the server reports in HELLO and INFO;
// clients use it to pick features. It is the newest release any
// implemented command comes from (doc/server.md, INFO, says why).
// lsmgo's own version is BuildInfo's, which INFO reports next to it.
const Version = "7.2.0"

// Server is a running lsmgo server: the engine, the RESP listener and the
// optional HTTP listener. Start creates one; Shutdown stops it.
type Server struct {
	base     Config // as given to Start, before the file and overrides
	logLevel slog.LevelVar
	log      *slog.Logger
	db       *lsmgo.DB
	ks       keyspace
	// databases is how many databases SELECT offers, fixed at start.
	databases int
	cursors   cursorTable
	scripts   scripting
	blocked   blockRegistry
	slowlog   slowlog
	latency   latencyMonitor
	access    accessClock // OBJECT IDLETIME
	// lfuCounters answer OBJECT FREQ once an LFU maxmemory-policy is
	// selected (lfu.go).
	lfuCounters atomic.Pointer[lfuClock]
	metrics     *metrics
	cmdStats    []*cmdStats // indexed by command.id
	startTime   time.Time
	// runID names this run of the server, as Redis' run_id does: 40 hex
	// digits, new at every start.
	runID string
	build Build

	// cfg is the running configuration, replaced whole on every change so
	// connections read it without locking.
	cfg atomic.Pointer[Config]
	// cfgMu serializes CONFIG SET and file reloads; fileCfg is the
	// configuration the file last resolved to, which a reload diffs
	// against so that it changes only what the file changed.
	cfgMu   sync.Mutex
	fileCfg Config

	ln      net.Listener
	httpSrv *http.Server
	httpLn  net.Listener
	// httpFront answers plain image GETs ahead of httpSrv, when the image
	// host is on.
	httpFront *httpfront.Listener
	images    *imgbed.Host // nil unless Config.Images
	// imageReclaim carries S3 blobs the compaction filter found dead to
	// images (whichever Host serves the DB now).
	imageReclaim *imgbed.Reclaimer
	// imagesHandler is images' routes; a full sync replaces both, holding
	// repl.swapMu, which the routes hold shared.
	imagesHandler http.Handler

	clientsMu sync.Mutex
	clients   map[uint64]*conn
	// closing is set (under clientsMu) when Shutdown begins; connections
	// check it before every blocking read.
	closing atomic.Bool
	// cutoff is set when shutdown's deadline passes: connections stop
	// executing buffered commands.
	cutoff atomic.Bool
	// loop serves client connections when "event-loop" is on.
	loop   *eventLoop
	connWG sync.WaitGroup
	bgWG   sync.WaitGroup
	done   chan struct{}
	nextID atomic.Uint64
	stats  serverStats
	errors errorStats
	pubsub pubsubHub
	// pause is CLIENT PAUSE's (pause.go).
	pause pauseState
	// monitors are the MONITOR clients (monitor.go).
	monitors monitorSet
	// tracking is client-side caching's table (tracking.go).
	tracking trackingTable
	// clientMem enforces maxmemory-clients.
	clientMem clientMemory
	// backups runs BGSAVE, SAVE and POST /admin/backup.
	backups backups
	// repl is replication, either role (replication.go).
	repl replication
	// acl holds the ACL users and the ACL LOG.
	acl aclUsers

	shutdownOnce sync.Once
	shutdownErr  error
	// shutdownAsked is closed when a client's SHUTDOWN starts the
	// shutdown (cmd_shutdown.go).
	shutdownAsked     chan struct{}
	shutdownAskedOnce sync.Once
}

// serverStats are the counters INFO reports.
type serverStats struct {
	connections, rejected, commands atomic.Int64
	hits, misses                    atomic.Int64
	netIn, netOut                   atomic.Int64
	// panics counts handler panics recovered by recoverHandler.
	panics atomic.Int64
	// epoch counts CONFIG RESETSTATs: a connection's tally begun
	// before the last one holds commands the reset cleared (tally).
	epoch atomic.Uint64
}

// Start resolves cfg (defaults, config file, overrides), opens the engine
// in cfg.Dir, binds the listeners and serves in the background until
// Shutdown. Addr and HTTPAddr report the bound addresses, which differ from
// the configured ones when a port is 0.
func Start(cfg Config) (*Server, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	s := &Server{
		base: cfg, fileCfg: r, startTime: time.Now(), runID: newRunID(), build: BuildInfo(),
		clients: map[uint64]*conn{}, done: make(chan struct{}), shutdownAsked: make(chan struct{}),
		imageReclaim: imgbed.NewReclaimer(),
	}
	s.cfg.Store(&r)
	s.acl.init(r.RequirePass)
	if _, err := s.acl.loadFile(r.ACLFile, r.ACLPubsubDefault == "allchannels"); err != nil {
		return nil, fmt.Errorf("lsmgo server: %w", err)
	}
	users, err := parseConfigUsers(r.Users, r.userOrigins, r.ACLPubsubDefault == "allchannels")
	if err != nil {
		return nil, fmt.Errorf("lsmgo server: %w", err)
	}
	s.acl.addConfigUsers(users)
	out := cfg.LogOutput
	if out == nil {
		out = os.Stderr
	}
	s.logLevel.Set(slogLevel(r.LogLevel))
	s.log = slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: &s.logLevel}))
	s.cursors.init()

	// A full sync a kill interrupted ends here: the data is the old or
	// the new copy, whole (replswap.go).
	if err := finishFullSync(s.fs(), r.Dir); err != nil {
		return nil, fmt.Errorf("lsmgo server: finishing a replica's full sync: %w", err)
	}
	if s.db, err = lsmgo.Open(r.Dir, s.engineOptions(&r)); err != nil {
		return nil, err
	}
	s.ks = keyspace{db: s.db, locks: newKeyLocks(), reclaim: newReclaimer(s.db, s.log),
		expiries: newExpiryWatch(s.publishExpired)}
	s.ks.spops.max = maxNodeSets
	if err := s.initReplication(); err != nil {
		s.ks.reclaim.stop()
		s.db.Close()
		s.ks.reclaim.wait()
		return nil, err
	}
	// A replica from the start: its image host must not write at start,
	// and clients' writes are refused before the link comes up.
	s.repl.following.Store(r.ReplicaOf != "")
	if err := s.start(&r); err != nil {
		s.closeListeners()
		s.ks.reclaim.stop()
		s.db.Close()
		s.ks.reclaim.wait()
		return nil, err
	}
	if r.ReplicaOf != "" {
		s.follow(replicaAddr(r.ReplicaOf))
	}
	s.log.Info("lsmgo server ready", "version", s.build.Version, "commit", s.build.Commit,
		"addr", s.Addr().String(), "http", s.HTTPAddr(), "dir", r.Dir, "appendfsync", r.AppendFsync)
	return s, nil
}

// engineOptions are the options the server opens its DB with.
func (s *Server) engineOptions(r *Config) *lsmgo.Options {
	return &lsmgo.Options{
		Sync:                     syncMode(r.AppendFsync),
		MemTableSize:             r.MemTableSize,
		CacheSize:                r.CacheSize,
		MaxConcurrentCompactions: r.MaxConcurrentCompactions,
		Logger:                   s.log.With("component", "engine"),
		FS:                       s.base.FS,
		NewCompactionFilter:      s.dbFilter(),
		OnCommit:                 s.onCommit,
		WALRetainSize:            r.ReplBacklogSize,
		WALRetainAge:             r.ReplBacklogTTL,
	}
}

// fs is the filesystem the DB is on.
func (s *Server) fs() vfs.FS {
	if s.base.FS != nil {
		return s.base.FS
	}
	return vfs.Default
}

// syncMode maps Redis' appendfsync to the engine's sync modes. All of them
// write the WAL before a write returns, so a killed process loses nothing.
func syncMode(appendfsync string) lsmgo.SyncMode {
	switch appendfsync {
	case "always":
		return lsmgo.SyncAlways
	case "no":
		return lsmgo.SyncNone
	}
	return lsmgo.SyncInterval(time.Second)
}

// httpHeaderTimeout bounds the reading of an HTTP request's head.
const httpHeaderTimeout = 10 * time.Second

func (s *Server) start(r *Config) error {
	err := s.loadKeyspace(r)
	if err != nil {
		return err
	}
	s.cmdStats = newCmdStats()
	s.metrics = newMetrics(s)
	if s.ln, err = net.Listen("tcp", r.Addr); err != nil {
		return err
	}
	if tcp, ok := s.ln.Addr().(*net.TCPAddr); ok {
		bound := *s.config()
		bound.boundPort = tcp.Port
		s.cfg.Store(&bound)
	}
	if r.HTTPAddr != "" {
		if s.httpLn, err = net.Listen("tcp", r.HTTPAddr); err != nil {
			return err
		}
		if r.Images {
			if s.images, err = s.newImageHost(r); err != nil {
				return err
			}
		}
		s.httpSrv = &http.Server{Handler: s.httpHandler(), ReadHeaderTimeout: httpHeaderTimeout}
	}
	if r.ConfigFile != "" {
		if err := s.watchConfig(r.ConfigFile); err != nil {
			return err
		}
	}
	s.turnExpiryWatch()
	if r.EventLoop {
		if s.loop, err = newEventLoop(s); err != nil {
			return err
		}
	}
	s.bgWG.Add(3)
	go s.acceptLoop()
	go s.returnMemoryLoop()
	go func() {
		defer s.bgWG.Done()
		s.ks.expiries.loop(&s.ks, s.done)
	}()
	if s.httpSrv != nil {
		var ln net.Listener = s.httpLn
		if s.images != nil {
			s.httpFront = httpfront.Listen(s.httpLn, s.servePlain, httpfront.Config{HeaderTimeout: httpHeaderTimeout})
			// Connections come back to the front after net/http answered
			// a page, a HEAD or a conditional GET on them.
			s.httpSrv.ConnState = s.httpFront.ConnState
			ln = s.httpFront
		}
		s.bgWG.Add(1)
		go func() {
			defer s.bgWG.Done()
			if err := s.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("http server stopped", "err", err)
			}
		}()
	}
	return nil
}

// loadKeyspace reads the keyspace's own state from the DB: at start, and
// when a replica's full sync has replaced the DB.
func (s *Server) loadKeyspace(r *Config) error {
	if err := s.ks.checkFormat(r.Dir); err != nil {
		return err
	}
	dbs, err := s.ks.loadDBs(r.Databases)
	if err != nil {
		return err
	}
	s.ks.dbs.Store(dbs)
	s.databases = r.Databases
	if s.ks.versions, err = newVersionClock(s.db); err != nil {
		return fmt.Errorf("lsmgo server: collection versions: %w", err)
	}
	return nil
}

// Addr returns the address the RESP listener is bound to.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// HTTPAddr returns the address the HTTP listener is bound to, or "" when
// HTTP is disabled.
func (s *Server) HTTPAddr() string {
	if s.httpLn == nil {
		return ""
	}
	return s.httpLn.Addr().String()
}

// DB returns the engine. It stays open until Shutdown.
func (s *Server) DB() *lsmgo.DB { return s.db }

// Config returns a copy of the running configuration.
func (s *Server) Config() Config { return *s.cfg.Load() }

func (s *Server) config() *Config { return s.cfg.Load() }

func (s *Server) acceptLoop() {
	defer s.bgWG.Done()
	var backoff time.Duration
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return
			}
			// Running out of file descriptors is transient: back off
			// rather than spin or give up.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed", "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
				continue
			case <-s.done:
				return
			}
		}
		backoff = 0
		s.admit(nc)
	}
}

// admit registers a new client and starts its goroutine, or refuses it
// with Redis' error when maxclients are connected or the server is
// stopping.
func (s *Server) admit(nc net.Conn) {
	s.clientsMu.Lock()
	if s.closing.Load() || len(s.clients) >= s.config().MaxClients || s.repl.swapping.Load() {
		msg := msgMaxClients
		if s.repl.swapping.Load() {
			msg = msgLoading
		}
		s.clientsMu.Unlock()
		s.stats.rejected.Add(1)
		nc.SetWriteDeadline(time.Now().Add(time.Second))
		nc.Write([]byte("-" + msg + "\r\n"))
		nc.Close()
		return
	}
	c := newConn(s, nc, s.nextID.Add(1))
	s.clients[c.id] = c
	s.connWG.Add(1)
	s.clientsMu.Unlock()
	s.stats.connections.Add(1)
	// Here rather than in newConn: the budget may evict other clients,
	// which takes clientsMu.
	c.rd.SetBudget(connBudget{c})
	// The event loop takes the client here, on the accepting goroutine,
	// so that it sees clients in the order they connected (two that
	// send blocking commands at once are then queued in that order).
	if l := s.loop; l != nil && s.config().AppendFsync != "always" && l.add(c) {
		return
	}
	go c.serveOn()
}

func (s *Server) removeClient(c *conn) {
	s.clientsMu.Lock()
	delete(s.clients, c.id)
	s.clientsMu.Unlock()
	s.connWG.Done()
}

// clientList returns the connected clients ordered by id.
func (s *Server) clientList() []*conn {
	s.clientsMu.Lock()
	list := make([]*conn, 0, len(s.clients))
	for _, c := range s.clients {
		list = append(list, c)
	}
	s.clientsMu.Unlock()
	sortConns(list)
	return list
}

func (s *Server) clientCount() int {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	return len(s.clients)
}

// Shutdown stops the server gracefully: it stops accepting, lets every
// connection finish the commands it has already received (replying to
// them), then flushes the memtable and closes the engine. Connections
// still busy when ctx ends or the shutdown-timeout setting passes,
// whichever comes first, are cut off: their sockets close and the
// commands they still had buffered are not executed. Calling Shutdown again
// returns the first call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.shutdown(ctx) })
	return s.shutdownErr
}

func (s *Server) shutdown(ctx context.Context) error {
	s.clientsMu.Lock()
	s.closing.Store(true)
	conns := make([]*conn, 0, len(s.clients))
	for _, c := range s.clients {
		conns = append(conns, c)
	}
	s.clientsMu.Unlock()
	close(s.done)
	s.ln.Close()
	// A connection checks closing after arming its read deadline, and the
	// deadline set here is later than the flag, so whichever happens last
	// wakes it: no connection can sleep through shutdown in a read.
	for _, c := range conns {
		c.interrupt()
	}
	if s.loop != nil {
		s.loop.kick(nil) // to stop once its last connection has
	}
	finished := make(chan struct{})
	go func() {
		s.connWG.Wait()
		close(finished)
	}()
	deadline := time.NewTimer(s.config().ShutdownTimeout)
	defer deadline.Stop()
	select {
	case <-finished:
	case <-ctx.Done():
		s.cutOff()
		<-finished
	case <-deadline.C:
		s.cutOff()
		<-finished
	}
	var err error
	if s.httpSrv != nil {
		if herr := s.httpSrv.Shutdown(ctx); herr != nil {
			s.httpSrv.Close()
		}
		if s.httpFront != nil {
			s.httpFront.Wait(ctx)
		}
	}
	s.bgWG.Wait()
	// A reclaiming compaction still running ends when the DB closes.
	s.ks.reclaim.stop()
	if ferr := s.db.Flush(); ferr != nil {
		err = fmt.Errorf("flush: %w", ferr)
	}
	lastSeq := s.db.LastSeq()
	if cerr := s.db.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("close: %w", cerr))
	} else {
		s.saveStream(lastSeq)
	}
	s.ks.reclaim.wait()
	s.log.Info("lsmgo server stopped", "err", err)
	return err
}

// cutOff ends a graceful shutdown that ran out of time: connections stop
// executing what they have buffered (a pipeline of thousands of commands
// would otherwise run to the end against a closed socket), and sockets
// close, which wakes connections blocked writing to clients that do not
// read.
func (s *Server) cutOff() {
	s.cutoff.Store(true)
	if r := s.scripts.running.Load(); r != nil && r.vm != nil {
		// A script does not read its socket: only a kill ends it.
		r.vm.Kill(luascript.ErrKilled)
	}
	busy := s.clientList()
	s.log.Warn("shutdown deadline passed; cutting off busy clients", "clients", len(busy))
	for _, c := range busy {
		c.closeSocket()
	}
}

// closeListeners releases what start bound when it fails midway.
func (s *Server) closeListeners() {
	for _, l := range []net.Listener{s.ln, s.httpLn} {
		if l != nil {
			l.Close()
		}
	}
	if s.done != nil {
		close(s.done)
	}
	s.bgWG.Wait()
}

func newRunID() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
