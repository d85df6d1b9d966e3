package server

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

func init() {
	register(spec{name: "migrate", arity: -6, flags: flagWrite | flagMovableKeys, firstKey: 3, lastKey: 3, step: 1, group: "generic", since: "2.6.0",
		summary: "Atomically transfers a key from one instance to another.", run: cmdMigrate})
}

// migrateOptions are MIGRATE's arguments after the timeout.
type migrateOptions struct {
	copy, replace      bool
	username, password []byte // password nil: no AUTH
	keys               [][]byte
}

// parseMigrateOptions checks MIGRATE's options in Redis' order; keys
// defaults to the key argument, args[3].
func parseMigrateOptions(args [][]byte) (migrateOptions, error) {
	o := migrateOptions{keys: args[3:4]}
	for i := 6; i < len(args); i++ {
		more := len(args) - 1 - i
		switch {
		case is(args[i], "COPY"):
			o.copy = true
		case is(args[i], "REPLACE"):
			o.replace = true
		case is(args[i], "AUTH") && more >= 1:
			o.password = args[i+1]
			i++
		case is(args[i], "AUTH2") && more >= 2:
			o.username, o.password = args[i+1], args[i+2]
			i += 2
		case is(args[i], "KEYS"):
			if len(args[3]) != 0 {
				return o, redisError("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
			}
			o.keys = args[i+1:]
			return o, nil
		default:
			return o, redisError(msgSyntax)
		}
	}
	return o, nil
}

// migrated is one key on its way: its payload and remaining TTL.
type migrated struct {
	key, payload []byte
	ttl          int64 // milliseconds, 0: none
	old          entry
}

// cmdMigrate implements MIGRATE host port key|"" db timeout [COPY]
// [REPLACE] [AUTH pw] [AUTH2 user pw] [KEYS key ...] as Redis does: it
// holds the keys' locks while it dumps them, sends AUTH, SELECT and one
// RESTORE per key in one write, reads the replies, and (without COPY)
// deletes the keys the target accepted. Like Redis, a MIGRATE to this
// same server waits for itself and ends in an IOERR after the timeout.
// Each MIGRATE opens a connection of its own: Redis caches them, which
// only saves the dial.
func cmdMigrate(c *conn, _ *command, args [][]byte) error {
	o, err := parseMigrateOptions(args)
	if err != nil {
		return err
	}
	timeoutMs, ok := parseInt(args[5])
	db, ok2 := parseInt(args[4])
	if !ok || !ok2 {
		return redisError(msgNotInteger)
	}
	if timeoutMs <= 0 {
		timeoutMs = 1000
	}
	timeout := time.Duration(min(timeoutMs, 1<<40)) * time.Millisecond
	held := c.lock(o.keys, 1)
	defer c.unlock(held)
	items, err := c.dumpForMigrate(o.keys)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		c.wr.SimpleString("NOKEY")
		return nil
	}
	accepted, err := sendMigration(net.JoinHostPort(string(args[1]), string(args[2])), timeout, db, o, items)
	if !o.copy && len(accepted) > 0 {
		for _, it := range accepted {
			c.s.ks.deleteKey(c.batch, &c.scratch, it.key)
		}
		if cerr := c.commit(); cerr != nil {
			return cerr
		}
		for _, it := range accepted {
			c.s.ks.reclaimDeleted(it.key, it.old)
		}
	}
	if err != nil {
		return err
	}
	c.ok()
	return nil
}

// dumpForMigrate dumps the keys that exist, at one engine state.
func (c *conn) dumpForMigrate(keys [][]byte) ([]migrated, error) {
	defer c.pin()()
	var items []migrated
	for _, key := range keys {
		e, exists, err := c.getEntry(key)
		if err != nil {
			return nil, err
		}
		if !exists {
			continue
		}
		p, err := c.s.ks.dumpValue(c.reader(), key, e, c.s.config().ProtoMaxBulkLen)
		if err != nil {
			return nil, err
		}
		it := migrated{key: key, payload: p, old: e}
		if !e.expireAt.IsZero() {
			it.ttl = max(1, e.expireAt.Sub(c.clock()).Milliseconds())
		}
		items = append(items, it)
	}
	return items, nil
}

// sendMigration restores items on the server at addr and returns those
// it accepted, with Redis' errors: IOERR for a connection that fails or
// times out, the target's first error reply otherwise.
func sendMigration(addr string, timeout time.Duration, db int64, o migrateOptions, items []migrated) ([]migrated, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, redisError("IOERR error or timeout connecting to the client")
	}
	defer nc.Close()
	var out []byte
	expect := 0
	if o.password != nil {
		if o.username != nil {
			out = resp.AppendCommand(out, []byte("AUTH"), o.username, o.password)
		} else {
			out = resp.AppendCommand(out, []byte("AUTH"), o.password)
		}
		expect++
	}
	out = resp.AppendCommand(out, []byte("SELECT"), strconv.AppendInt(nil, db, 10))
	expect++
	preamble := expect
	for _, it := range items {
		cmd := [][]byte{[]byte("RESTORE"), it.key, strconv.AppendInt(nil, it.ttl, 10), it.payload}
		if o.replace {
			cmd = append(cmd, []byte("REPLACE"))
		}
		out = resp.AppendCommand(out, cmd...)
		expect++
	}
	nc.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := nc.Write(out); err != nil {
		return nil, redisError("IOERR error or timeout writing to target instance")
	}
	rd := resp.NewReader(nc, resp.Limits{})
	var accepted []migrated
	var targetErr error
	preambleFailed := false
	for i := range expect {
		nc.SetReadDeadline(time.Now().Add(timeout))
		v, err := rd.ReadValue()
		if err != nil {
			if targetErr == nil {
				targetErr = redisError("IOERR error or timeout reading to target instance")
			}
			break
		}
		// As in Redis, a failed AUTH or SELECT fails every key; past
		// them, each key the target restored counts, whatever the others.
		switch {
		case v.Type == '-':
			preambleFailed = preambleFailed || i < preamble
			if targetErr == nil {
				targetErr = redisError(fmt.Sprintf("ERR Target instance replied with error: %s", v.Err))
			}
		case i >= preamble && !preambleFailed:
			accepted = append(accepted, items[i-preamble])
		}
	}
	return accepted, targetErr
}
