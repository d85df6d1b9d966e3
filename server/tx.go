package server

import (
	"bytes"
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/keylayout"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// Transactions: MULTI queues commands, EXEC runs them (doc/server.md,
// "Transactions").
//
// Isolation: EXEC takes the stripe locks of every key its commands name
// (and of the keys the client watches) before it runs any, and every
// stripe when a command's keys are not located by its table entry (a
// keyless command that reads or writes the keyspace, such as FLUSHALL or
// KEYS, or one flagged flagMovableKeys), so no other client writes those
// keys until EXEC's batch is committed. Reads go through a View taken
// once the locks are held, so all of EXEC's reads see one state.
//
// One batch: while EXEC runs, conn.commit does not commit a command's
// batch; it appends it to the transaction's, and conn.reader returns an
// lsmgo.Overlay of the View with that batch on top, so each command sees
// the writes of those before it. The batch commits once, at the end: a
// crash leaves all of the transaction or none of it. Handlers take part
// without code of their own as long as they read through c.reader() (or
// c.pin), write through c.batch and c.commit, and lock through c.lock: a
// new type's commands need only a correct key spec in their table entry.
//
// WATCH: every batch the keyspace applies is first shown to the watch
// registry, which marks the clients watching any key it writes, before
// the batch commits (ks.apply); EXEC then finds the mark. A watched key
// that expired since WATCH is found at EXEC, by reading it again.

func init() {
	const g = "transactions"
	f := flagFast | flagLoading | flagStale
	register(
		spec{name: "multi", arity: 1, flags: f, pipe: pipeNoQueue, group: g, since: "1.2.0",
			summary: "Starts a transaction.", run: cmdMulti},
		spec{name: "exec", arity: 1, flags: flagLoading | flagStale, pipe: pipeNoQueue, group: g, since: "1.2.0",
			summary: "Executes all commands in a transaction.", run: cmdExec},
		spec{name: "discard", arity: 1, flags: f, pipe: pipeNoQueue, group: g, since: "2.0.0",
			summary: "Discards a transaction.", run: cmdDiscard},
		spec{name: "watch", arity: -2, flags: f, pipe: pipeNoQueue, firstKey: 1, lastKey: -1, step: 1, group: g, since: "2.2.0",
			summary: "Monitors changes to keys to determine the execution of a transaction.", run: cmdWatch},
		spec{name: "unwatch", arity: 1, flags: f, group: g, since: "2.2.0",
			summary: "Forgets about watched keys of a transaction.", run: cmdUnwatch},
	)
}

// transaction is what MULTI has queued.
type transaction struct {
	cmds []queued
	// bytes counts the queued arguments, bounded by
	// client-query-buffer-limit.
	bytes int64
	// aborted records an error at queue time: EXEC will refuse with
	// EXECABORT.
	aborted bool
}

// queued is one queued command: its table entry (a subcommand's, when
// it has one) and a copy of its arguments.
type queued struct {
	cmd  *command
	args [][]byte
}

// execState is a running EXEC's: the batch that collects its commands'
// writes and the reader that shows them over the locked state, and the
// map of databases its commands changed (SWAPDB, FLUSHDB), nil if none,
// published once the batch commits.
type execState struct {
	batch   *lsmgo.Batch
	overlay *lsmgo.Overlay
	dbs     *dbMap
}

func cmdMulti(c *conn, _ *command, _ [][]byte) error {
	if c.tx != nil {
		return redisError("ERR MULTI calls can not be nested")
	}
	c.tx = &transaction{}
	c.queued.Store(0)
	c.bufs.multiMem.Store(0)
	c.setState(stateMulti, true)
	c.ok()
	return nil
}

// queue adds a command to the open transaction and answers +QUEUED.
func (c *conn) queue(cmd *command, args [][]byte) {
	q := queued{cmd: cmd, args: make([][]byte, len(args))}
	for i, a := range args {
		q.args[i] = bytes.Clone(a)
		c.tx.bytes += int64(len(a))
	}
	if c.tx.bytes > c.s.config().QueryBufferLimit {
		// Queued commands are memory the client holds, like a query
		// buffer: past the same bound the transaction is refused.
		c.tx.aborted = true
		c.tx.cmds = nil
		c.bufs.multiMem.Store(0)
		c.fail("ERR transaction exceeds client-query-buffer-limit")
		return
	}
	c.tx.cmds = append(c.tx.cmds, q)
	c.queued.Add(1)
	c.bufs.multiMem.Add(argBytes(args) + queuedArgCost*int64(len(args)))
	c.wr.SimpleString("QUEUED")
}

// rejectQueued records that a command sent inside MULTI was refused
// before it could be queued. A refused EXEC ends the transaction with
// Redis' EXECABORT reply carrying the reason; any other refusal makes the
// coming EXEC fail.
func (c *conn) rejectQueued(cmd *command, msg string) {
	if cmd != nil && cmd.run != nil && isExec(cmd) {
		c.discard()
		c.wr.Error("EXECABORT Transaction discarded because of: " + trimErrCode(msg))
		return
	}
	c.tx.aborted = true
	c.wr.Error(msg)
}

// writes reports whether a queued command writes: EXEC is then refused
// as a write is (on a read-only replica, without enough good replicas),
// the state having maybe changed since the commands were queued.
func (tx *transaction) writes() bool {
	for _, q := range tx.cmds {
		if q.cmd.flags&flagWrite != 0 {
			return true
		}
	}
	return false
}

// isExec reports whether cmd is EXEC's table entry.
func isExec(cmd *command) bool { return cmd == commands["exec"] }

// trimErrCode drops an error's leading "ERR ", as Redis does when it
// quotes an error inside EXECABORT.
func trimErrCode(msg string) string {
	if rest, ok := bytes.CutPrefix([]byte(msg), []byte("ERR ")); ok {
		return string(rest)
	}
	return msg
}

func cmdDiscard(c *conn, _ *command, _ [][]byte) error {
	if c.tx == nil {
		return redisError("ERR DISCARD without MULTI")
	}
	c.discard()
	c.ok()
	return nil
}

// discard ends the transaction, if any, and forgets the watched keys.
func (c *conn) discard() {
	c.tx = nil
	c.setState(stateMulti, false)
	c.unwatchAll()
}

func cmdExec(c *conn, _ *command, _ [][]byte) error {
	tx := c.tx
	if tx == nil {
		return redisError("ERR EXEC without MULTI")
	}
	defer c.discard()
	if tx.aborted {
		return redisError("EXECABORT Transaction discarded because of previous errors.")
	}
	c.doneReading() // before the stripes: see databases.go
	locks := c.s.ks.locks
	held := c.txLocks(tx).lock(locks)
	defer held.unlock(locks)
	view, err := c.s.ks.newView()
	if err != nil {
		return err
	}
	defer view.Close()
	if aborted, err := c.watchBroken(view); err != nil || aborted {
		if err == nil {
			c.wr.NullArray()
		}
		return err
	}
	batch := c.s.ks.newBatch()
	c.exec = &execState{batch: batch, overlay: view.Overlay(batch)}
	// The replies wait until the batch has committed: a transaction
	// whose batch the engine refuses answers with that error alone, and
	// no reply claims a write that did not happen.
	out := c.wr
	var buf bytes.Buffer
	c.wr = resp.NewWriter(&buf)
	c.wr.SetProtocol(out.Protocol())
	c.wr.ArrayHeader(len(tx.cmds))
	for _, q := range tx.cmds {
		if msg := c.aclChangedSinceQueued(q.cmd, q.args); msg != "" {
			c.fail(msg)
			continue
		}
		c.run(q.cmd, q.args)
	}
	c.failed = false // EXEC itself fails only as a whole, below
	c.wr.Flush()
	proto := c.wr.Protocol() // a queued HELLO may have changed it
	st := c.exec
	c.wr, c.exec = out, nil
	c.wr.SetProtocol(proto)
	if batch.Count() > 0 || batch.Err() != nil {
		if err := c.apply(batch); err != nil {
			c.dropNotes()
			return err
		}
	}
	if st.dbs != nil {
		c.publishDBs(c.s.ks.dbs.Load(), st.dbs)
	}
	c.wr.Raw(buf.Bytes())
	return nil
}

// txLocks returns the stripes EXEC holds: those of the watched keys and
// of every key the queued commands name, or all of them when a command's
// keys are not where its table entry says (a keyless command that reads
// or writes the keyspace, or one with flagMovableKeys).
func (c *conn) txLocks(tx *transaction) lockSet {
	locks := c.s.ks.locks
	set := c.stripes[:0]
	for _, w := range c.watched {
		set = set.add(locks, w.key)
	}
	for _, q := range tx.cmds {
		cmd := q.cmd
		if cmd.firstKey <= 0 || cmd.flags&flagMovableKeys != 0 {
			if cmd.flags&(flagWrite|flagReadonly|flagMovableKeys) != 0 {
				return allStripes(set)
			}
			continue
		}
		last := cmd.lastKey
		if last < 0 {
			last += len(q.args)
		}
		for i := cmd.firstKey; i <= last && i < len(q.args); i += max(cmd.step, 1) {
			set = set.add(locks, q.args[i])
		}
	}
	return set
}

// watchedKey is a key this client watches in database db, under its
// name in the watch registry (watchKey), and whether it held a value when
// WATCH read it: a value gone by EXEC without a write having marked the
// client has expired meanwhile.
type watchedKey struct {
	key     []byte
	db      int
	reg     string
	existed bool
}

// watchKey is the registry's name of key in database db.
func watchKey(dst []byte, db int, key []byte) []byte {
	return append(binary.BigEndian.AppendUint32(dst[:0], uint32(db)), key...)
}

func cmdWatch(c *conn, _ *command, args [][]byte) error {
	if c.tx != nil {
		return redisError("ERR WATCH inside MULTI is not allowed")
	}
	// A writer marks the watchers of its keys before its commit, holding
	// their stripes until the commit is visible (ks.apply); a replica's
	// link does so holding applyMu. So WATCH registers and reads holding
	// the stripes, and passes through applyMu in between: a write that
	// marked before the registration is visible to the read, and any
	// later one marks this client.
	held := c.lock(args[1:], 1)
	defer c.unlock(held)
	for _, key := range args[1:] {
		reg := string(watchKey(nil, c.db, key))
		if c.watches(reg) {
			continue
		}
		c.s.ks.watches.add(c, reg)
		c.s.repl.applyMu.Lock()
		//lint:ignore SA2001 a barrier: see above
		c.s.repl.applyMu.Unlock()
		exists, err := c.s.ks.exists(c.s.ks.latest(), &c.scratch, key)
		if err != nil {
			return err
		}
		c.watched = append(c.watched, watchedKey{key: bytes.Clone(key), db: c.db, reg: reg, existed: exists})
	}
	c.ok()
	return nil
}

func (c *conn) watches(reg string) bool {
	for _, w := range c.watched {
		if w.reg == reg {
			return true
		}
	}
	return false
}

func cmdUnwatch(c *conn, _ *command, _ [][]byte) error {
	c.unwatchAll()
	c.ok()
	return nil
}

// unwatchAll forgets the watched keys and any change seen to them.
func (c *conn) unwatchAll() {
	for _, w := range c.watched {
		c.s.ks.watches.remove(c, w.reg)
	}
	c.watched = nil
	c.watchDirty.Store(false)
}

// watchBroken reports whether EXEC must fail for a watched key: written
// since WATCH (by any client, this one included), or expired since. EXEC
// calls it holding the watched keys' stripes, with view taken after.
func (c *conn) watchBroken(view lsmgo.Reader) (bool, error) {
	if c.watchDirty.Load() {
		return true, nil
	}
	for _, w := range c.watched {
		if !w.existed {
			continue
		}
		exists, err := c.s.ks.exists(view, &keyBuf{ns: c.dbs().ns[w.db]}, w.key)
		if err != nil || !exists {
			return !exists, err
		}
	}
	return false, nil
}

// watchRegistry knows which clients watch which keys, by database and
// key. Every batch the keyspace applies passes through touch first; with
// no key watched that costs one atomic load.
type watchRegistry struct {
	n    atomic.Int64 // keys watched, over all clients
	mu   sync.Mutex
	keys map[string]map[*conn]struct{}
}

func (r *watchRegistry) add(c *conn, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = map[string]map[*conn]struct{}{}
	}
	w := r.keys[key]
	if w == nil {
		w = map[*conn]struct{}{}
		r.keys[key] = w
	}
	w[c] = struct{}{}
	r.n.Add(1)
}

func (r *watchRegistry) remove(c *conn, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.keys[key]
	delete(w, c)
	if len(w) == 0 {
		delete(r.keys, key)
	}
	r.n.Add(-1)
}

// touch marks the clients watching a key that b writes, in the database
// that dbs maps its namespace to. It runs before b commits, under the
// writer's stripe locks, so an EXEC holding a watched key's stripe sees
// either the mark or none of b; and no SWAPDB changes dbs meanwhile. (An
// EXEC whose own SWAPDB precedes its writes is the exception: its writes
// count in the databases of before the swap.)
func (r *watchRegistry) touch(b *lsmgo.Batch, dbs *dbMap) {
	r.touchKeys(b.ForEachKey, dbs)
}

// touchKeys is touch for the engine keys each yields.
func (r *watchRegistry) touchKeys(each func(func(k []byte)), dbs *dbMap) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var buf []byte
	each(func(k []byte) {
		ns, key, ok := userKeyOf(k)
		if !ok {
			return
		}
		if db := dbs.dbOf(ns); db >= 0 {
			buf = watchKey(buf, db, key)
			for c := range r.keys[string(buf)] {
				c.watchDirty.Store(true)
			}
		}
	})
}

// touchWatched marks the clients watching key in the running command's
// database, for a command that Redis counts as a change though it writes
// nothing; the caller holds key's stripe.
func (c *conn) touchWatched(key []byte) {
	if c.s.tracking.active() {
		c.s.invalidateKeys(c, key)
	}
	r := &c.s.ks.watches
	if r.n.Load() == 0 {
		return
	}
	reg := watchKey(nil, c.db, key)
	r.mu.Lock()
	defer r.mu.Unlock()
	for w := range r.keys[string(reg)] {
		w.watchDirty.Store(true)
	}
}

// touchChanged marks, after the map of databases changed from old to m,
// the clients watching a key whose database changed and that exists in
// its old namespace or in the one its database now has, as Redis does on
// SWAPDB and FLUSHDB.
func (r *watchRegistry) touchChanged(ks *keyspace, old, m *dbMap) {
	if r.n.Load() == 0 {
		return
	}
	changed := changedDBs(old, m)
	r.mu.Lock()
	defer r.mu.Unlock()
	for reg, clients := range r.keys {
		db, key := int(binary.BigEndian.Uint32([]byte(reg))), []byte(reg[4:])
		if db >= len(old.ns) {
			continue
		}
		for _, in := range changed[old.ns[db]] {
			if exists, err := ks.exists(ks.latest(), &keyBuf{ns: in}, key); exists || err != nil {
				for c := range clients {
					c.watchDirty.Store(true)
				}
				break
			}
		}
	}
}

// userKeyOf returns the namespace and user key an engine key belongs to:
// a key's metadata or value, or one of its elements; ok is false for the
// server's own entries.
func userKeyOf(k []byte) (nsID, []byte, bool) {
	if len(k) == 0 {
		return 0, nil, false
	}
	var ns nsID
	switch k[0] {
	case dataPrefix:
		return 0, k[1:], true
	case keylayout.NSData:
		if len(k) >= 5 {
			return nsID(binary.BigEndian.Uint32(k[1:5])), k[5:], true
		}
		return 0, nil, false
	case elemPrefix:
		k = k[1:]
	case keylayout.NSElem:
		if len(k) < 5 {
			return 0, nil, false
		}
		ns, k = nsID(binary.BigEndian.Uint32(k[1:5])), k[5:]
	default:
		return 0, nil, false
	}
	if len(k) >= 4 {
		n := binary.BigEndian.Uint32(k)
		if uint64(n) <= uint64(len(k)-4) {
			return ns, k[4 : 4+n], true
		}
	}
	return 0, nil, false
}
