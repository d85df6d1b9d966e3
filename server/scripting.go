package server

import (
	"bytes"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/internal/luascript"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// Scripting: EVAL and FCALL run Lua (package luascript) atomically, the way
// EXEC runs its commands (doc/server.md, "Scripting").
//
// Isolation: a script holds every stripe, exclusively, for as long as it
// runs. Redis scripts declare their keys, but may touch any key, and
// nothing checks that they keep to the declared ones; holding all stripes
// is the only choice that stays isolated whatever the script does. It
// costs little more than Redis' own rule (one script or command at a
// time): only the reads that need no lock go on beside a script, and they
// see the state before it, since its writes commit at its end.
//
// One batch: the script's commands run like EXEC's (c.exec set), so their
// writes collect in one batch, read back through an overlay, and commit
// once: a crash leaves all of a script or none of it. Inside EXEC a script
// joins EXEC's batch and locks.
//
// Lock order: the gate, the stripes, then the scripting mutex. A script
// inside EXEC comes to the mutex holding EXEC's stripes, so EVAL takes
// them in that order too; EXEC never takes the gate, which admits one
// script at a time to the stripes and lets scripts hand them on (enter,
// leave).

// scripting is the server's Lua state: the VM for EVAL's scripts, the one
// for functions, and the script running now.
type scripting struct {
	// mu serializes the VMs, which run one script at a time, as Redis
	// does.
	mu   sync.Mutex
	eval *luascript.VM
	// gate admits one script at a time to the stripes (see enter); it
	// comes before the stripes, which come before mu. stripes is set
	// while scripts hold every stripe; lockedAt, handedOn and waiting
	// decide when they let go.
	gate      sync.Mutex
	stripes   lockSet
	lockedAt  time.Time
	handedOn  int
	waiting   atomic.Int32
	buffers   *scriptIO
	functions *luascript.VM
	running   atomic.Pointer[runningScript]
	// libraries and functionCount are the functions VM's counts as of
	// its last change, for FUNCTION STATS, which a running function
	// must not wait for.
	libraries, functionCount atomic.Int64
	// cachedScripts is the EVAL VM's script count, for INFO.
	cachedScripts atomic.Int64
	// functionIndex is the functions VM's functions as of its last
	// change, which FCALL looks its function up in.
	functionIndex atomic.Pointer[functionIndex]
}

// functionIndex is the functions VM's functions by lower-case name. FCALL
// checks its function here before it waits at the gate: taking the
// scripting mutex for that made every FCALL wait twice behind the
// running script, and listing the libraries to recount them after each
// lookup cost an allocation per library and a sort.
type functionIndex struct {
	vm    *luascript.VM
	funcs map[string]*luascript.Function
}

// lookup finds the function named name, case-insensitively.
func (ix *functionIndex) lookup(name []byte) (*luascript.Function, bool) {
	if f, ok := ix.funcs[string(name)]; ok {
		return f, true
	}
	f, ok := ix.funcs[strings.ToLower(string(name))]
	return f, ok
}

// recount records the functions VM's counts and index; mu is held.
func (sc *scripting) recount() {
	if sc.functions == nil {
		return
	}
	libs := sc.functions.Libraries()
	ix := &functionIndex{vm: sc.functions, funcs: map[string]*luascript.Function{}}
	for _, lib := range libs {
		for _, f := range lib.Functions {
			ix.funcs[strings.ToLower(f.Name)] = f
		}
	}
	sc.libraries.Store(int64(len(libs)))
	sc.functionCount.Store(int64(len(ix.funcs)))
	sc.functionIndex.Store(ix)
}

// runningScript is what BUSY replies, SCRIPT KILL and FUNCTION STATS need
// to know of the script running now.
type runningScript struct {
	conn     *conn
	vm       *luascript.VM
	name     string
	command  string
	function bool
	// args is the FCALL command, for FUNCTION STATS.
	args  [][]byte
	start time.Time
	// wrote is set once the script has run a write command: Redis will
	// not kill a script then, since its writes could not be undone.
	wrote atomic.Bool
}

// evalVM returns the EVAL VM, made on first use; s.scripts.mu is held.
func (s *Server) evalVM() *luascript.VM {
	if s.scripts.eval == nil {
		s.scripts.eval = luascript.New(s.vmOptions())
	}
	return s.scripts.eval
}

func (s *Server) vmOptions() luascript.Options {
	return luascript.Options{Version: Version, Log: s.scriptLog}
}

// scriptLog writes redis.log's messages to the server log.
func (s *Server) scriptLog(level int, msg string) {
	switch level {
	case luascript.LogDebug, luascript.LogVerbose:
		s.log.Debug(msg, "source", "script")
	case luascript.LogNotice:
		s.log.Info(msg, "source", "script")
	default:
		s.log.Warn(msg, "source", "script")
	}
}

// Commands a script may not call, and commands other clients may still
// run while a script is past busy-reply-threshold: Redis 7.0's noscript
// and allow_busy flags over the commands lsmgo has
// (TestScriptCommandFlags checks them against redis-server).
var (
	notInScripts = map[string]bool{}
	allowedBusy  = map[string]bool{}
)

func init() {
	for _, name := range strings.Fields(`auth bgrewriteaof bgsave blmove blpop brpop brpoplpush
		bzpopmax bzpopmin client|caching client|getname client|getredir client|id client|info
		client|kill client|list cluster|reset client|no-evict client|pause client|reply client|setname
		client|tracking client|trackinginfo client|unblock client|unpause config|get
		config|resetstat config|rewrite config|set debug discard eval eval_ro evalsha evalsha_ro
		exec failover fcall fcall_ro function|delete function|dump function|flush function|kill
		function|list function|load function|restore function|stats hello latency|doctor
		latency|graph latency|histogram latency|history latency|latest latency|reset monitor
		multi psubscribe psync punsubscribe quit replconf replicaof reset role save script|debug
		script|exists script|flush script|kill script|load shutdown slaveof ssubscribe subscribe
		sunsubscribe sync lsmsync unsubscribe unwatch wait watch acl|cat acl|deluser acl|dryrun
		acl|genpass acl|getuser acl|list acl|load acl|log acl|save acl|setuser acl|users
		acl|whoami`) {
		notInScripts[name] = true
	}
	for _, name := range strings.Fields(`auth discard function|kill function|stats hello multi
		quit replconf reset script|kill shutdown unwatch watch`) {
		allowedBusy[name] = true
	}
}

// Redis' BUSY replies, by the kind of script running.
const (
	msgBusyScript   = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	msgBusyFunction = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	msgNotBusy      = "NOTBUSY No scripts in execution right now."
	msgUnkillable   = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
)

// refusedBusy answers BUSY, and reports true, when another client's
// script has run past busy-reply-threshold and cmd is not one of the
// commands allowed meanwhile.
func (c *conn) refusedBusy(cmd *command) bool {
	r := c.s.scripts.running.Load()
	if r == nil || r.conn == c || allowedBusy[cmd.name] || time.Since(r.start) < c.s.config().BusyReplyThreshold {
		return false
	}
	msg := msgBusyScript
	if r.function {
		msg = msgBusyFunction
	}
	c.reject(cmd, msg)
	return true
}

// killScript is SCRIPT KILL (function false) and FUNCTION KILL.
func (c *conn) killScript(function bool) error {
	r := c.s.scripts.running.Load()
	switch {
	case r == nil:
		return redisError(msgNotBusy)
	case r.wrote.Load():
		return redisError(msgUnkillable)
	case r.function && !function:
		return redisError(msgBusyFunction)
	case !r.function && function:
		return redisError(msgBusyScript)
	}
	r.vm.Kill(luascript.ErrKilled)
	c.ok()
	return nil
}

// runScript runs one script call: run, given the writer for its reply and
// the caller for its commands, under the scripting mutex, with every
// stripe held and its writes collected in one batch (see above).
func (c *conn) runScript(r *runningScript, readOnly bool, run func(w *resp.Writer, caller luascript.Caller)) error {
	ks := &c.s.ks
	sc := &c.s.scripts
	own := !c.inExec()
	// A script may run long, and SCRIPT KILL must reach it meanwhile.
	c.detach()
	c.doneReading() // before the stripes: see databases.go
	// A script starts in its caller's database, and its SELECT does not
	// change the caller's (Redis 7).
	defer func(db int) {
		if c.db != db {
			c.selectDB(db)
		}
	}(c.db)
	if own {
		sc.enter(ks.locks)
		defer sc.leave(ks.locks)
		view, err := ks.newView()
		if err != nil {
			return err
		}
		defer view.Close()
		b := ks.newBatch()
		c.exec = &execState{batch: b, overlay: view.Overlay(b)}
		defer func() { c.exec = nil }()
	}
	caller := &scriptCaller{c: c, readOnly: readOnly, run: r}
	reply, stopped := sc.call(c, r, caller, run)
	if stopped && own {
		c.exec.batch.Reset()
		ks.lostBatch()
		c.dropNotes()
	}
	if own {
		b := c.exec.batch
		if b.Count() > 0 || b.Err() != nil {
			if err := c.apply(b); err != nil {
				c.dropNotes()
				return err
			}
		}
		if c.exec.dbs != nil && !stopped {
			c.publishDBs(c.s.ks.dbs.Load(), c.exec.dbs)
		}
	}
	if bytes.HasPrefix(reply, []byte("-")) {
		c.failed = true
		// An error a command raised was counted when the command
		// failed; Redis does not count it again as the script's.
		msg := string(reply[1:bytes.IndexByte(reply, '\r')])
		if !caller.raised(msg) {
			c.s.errors.count(msg)
		}
	}
	c.wr.Raw(reply)
	return nil
}

// Scripts hand the stripes on. Taking and releasing all 1024 stripes cost
// more than half of a short script's CPU (EVALSHA of a three-command
// script ran at a tenth of Redis' rate), so a script that finishes while
// another waits at the gate leaves the stripes locked for it, up to
// handOnMax scripts or handOnTime, after which they are released so the
// other clients' commands get their turn. Every stripe is one lock now
// (keyLocks.whole), but taking it still waits for every command that
// holds a stripe, which a script handed the lock does not.
const (
	handOnMax  = 64
	handOnTime = time.Millisecond
)

// enter admits the calling script: the gate, then every stripe, unless
// the previous script handed them on.
func (sc *scripting) enter(locks *keyLocks) {
	sc.waiting.Add(1)
	sc.gate.Lock()
	sc.waiting.Add(-1)
	if sc.stripes == nil {
		sc.stripes = allStripes(nil).lock(locks)
		sc.lockedAt = time.Now()
		sc.handedOn = 0
	}
}

// leave hands the stripes on to a waiting script, or releases them, and
// opens the gate.
func (sc *scripting) leave(locks *keyLocks) {
	if sc.waiting.Load() > 0 && sc.handedOn < handOnMax && time.Since(sc.lockedAt) < handOnTime {
		sc.handedOn++
	} else {
		sc.stripes.unlock(locks)
		sc.stripes = nil
	}
	sc.gate.Unlock()
}

// call runs the script under mu and returns its reply, and whether it
// was stopped from outside (SCRIPT KILL, the memory bound, shutdown): such
// a script did not finish, so none of its writes may commit. One that
// failed on its own keeps them, as in Redis.
func (sc *scripting) call(c *conn, r *runningScript, caller *scriptCaller, run func(w *resp.Writer, caller luascript.Caller)) ([]byte, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	defer sc.running.Store(nil)
	if r.vm == nil { // EVAL's; FCALL names the functions VM
		r.vm = c.s.evalVM()
	}
	io := sc.io()
	caller.io = io
	io.reply.Reset()
	io.replyW.SetProtocol(c.wr.Protocol())
	r.start = time.Now()
	sc.running.Store(r)
	run(io.replyW, caller)
	io.replyW.Flush()
	return bytes.Clone(io.reply.Bytes()), r.vm.Stopped()
}

// scriptIO is the buffers a script's replies pass through, kept between
// scripts (their allocation was a fifth of EVALSHA's cost); only the
// holder of the scripting mutex uses them.
type scriptIO struct {
	reply  bytes.Buffer
	replyW *resp.Writer
	// call holds one command's reply, written by callW and parsed back
	// by callR for the script.
	call  bytes.Buffer
	callW *resp.Writer
	callR *resp.Reader
}

// io returns the scripting buffers, made on first use; mu is held.
func (sc *scripting) io() *scriptIO {
	if sc.buffers == nil {
		b := &scriptIO{}
		b.replyW = resp.NewWriter(&b.reply)
		b.callW = resp.NewWriter(&b.call)
		b.newCallReader()
		sc.buffers = b
	}
	return sc.buffers
}

// newCallReader (re)makes the reader of commands' replies: a reader that
// met an error stays failed.
func (b *scriptIO) newCallReader() {
	// The replies are the server's own: no limit below the reader's
	// largest.
	b.callR = resp.NewReader(&b.call, resp.Limits{MaxBulkLen: math.MaxInt64, MaxMultibulkLen: math.MaxInt64,
		MaxInlineLen: math.MaxInt64})
}

// scriptCaller runs a script's redis.call commands on the script's
// connection, through the table, with Redis' checks for scripts.
type scriptCaller struct {
	c        *conn
	readOnly bool
	run      *runningScript
	io       *scriptIO
	// errs are the error replies the script's commands got.
	errs []string
}

// raised reports whether msg, the script's error reply, is one of its
// commands' errors passed on.
func (sc *scriptCaller) raised(msg string) bool {
	for _, e := range sc.errs {
		if strings.HasPrefix(msg, e) {
			return true
		}
	}
	return false
}

func scriptError(msg string) resp.Value { return resp.Value{Type: '-', Err: msg} }

func (sc *scriptCaller) Call(args [][]byte, proto int) resp.Value {
	c := sc.c
	cmd := lookup(commands, &c.nameBuf, args[0])
	if cmd == nil {
		return scriptError(luascript.ErrUnknownCommand)
	}
	if !cmd.arityOK(len(args)) {
		return scriptError(luascript.ErrWrongArity)
	}
	if cmd.subs != nil && len(args) > 1 {
		sub := lookup(cmd.subs, &c.nameBuf, args[1])
		if sub == nil {
			return scriptError(luascript.ErrUnknownCommand)
		}
		if !sub.arityOK(len(args)) {
			return scriptError(luascript.ErrWrongArity)
		}
		cmd = sub
	}
	if notInScripts[cmd.name] {
		return scriptError(luascript.ErrNotAllowed)
	}
	if p := c.perms(); !p.unrestricted {
		if msg := c.aclRefusal(p, cmd, args, aclCtxLua); msg != "" {
			return scriptError(msg)
		}
	}
	if cmd.flags&flagWrite != 0 {
		if sc.readOnly {
			return scriptError(luascript.ErrWriteReadOnly)
		}
		if msg := c.s.writeRefusal(); msg != "" {
			return scriptError(msg)
		}
		sc.run.wrote.Store(true)
	}
	out, failed := c.wr, c.failed
	io := sc.io
	io.call.Reset()
	io.callW.SetProtocol(proto)
	c.wr = io.callW
	c.feedMonitors(cmd, args, "lua")
	c.run(cmd, args)
	io.callW.Flush()
	c.wr, c.failed = out, failed
	v, err := io.callR.ReadValue()
	if err != nil {
		io.newCallReader()
		return scriptError("ERR " + err.Error())
	}
	if v.Type == '-' {
		sc.errs = append(sc.errs, v.Err)
	}
	return v
}
