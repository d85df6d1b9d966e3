package server

import (
	"net"
	"strconv"
	"strings"
)

func init() {
	const repl = "server"
	admin := flagAdmin
	register(
		spec{name: "replicaof", arity: 3, flags: admin | flagStale, group: repl, since: "5.0.0",
			summary: "Configures a server as replica of another, or promotes it to a master.", run: cmdReplicaOf},
		spec{name: "slaveof", arity: 3, flags: admin | flagStale, group: repl, since: "1.0.0",
			summary: "Sets a Redis server as a replica of another, or promotes it to being a master.", run: cmdReplicaOf},
		spec{name: "role", arity: 1, flags: flagLoading | flagStale | flagFast, group: repl, since: "2.8.12",
			summary: "Returns the replication role.", run: cmdRole},
		spec{name: "psync", arity: -3, flags: admin, group: repl, since: "2.8.0",
			summary: "An internal command used in replication.", run: cmdRedisSync},
		spec{name: "sync", arity: 1, flags: admin, group: repl, since: "1.0.0",
			summary: "An internal command used in replication.", run: cmdRedisSync},
		spec{name: "replconf", arity: -1, flags: admin | flagLoading | flagStale, group: repl, since: "3.0.0",
			summary: "An internal command for configuring the replication stream.", run: cmdReplConf},
		spec{name: "lsmsync", arity: -4, flags: admin, group: repl, since: "7.2.0",
			summary: "Streams the committed batches to an lsmgo replica (doc/replication.md).", run: cmdLSMSync},
	)
}

// cmdReplicaOf is REPLICAOF host port and REPLICAOF NO ONE.
func cmdReplicaOf(c *conn, _ *command, args [][]byte) error {
	host, port := string(args[1]), string(args[2])
	if strings.EqualFold(host, "no") && strings.EqualFold(port, "one") {
		if err := c.s.setReplicaOf(""); err != nil {
			return err
		}
		c.wr.SimpleString("OK")
		return nil
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return redisError("ERR Invalid master port")
	}
	addr := net.JoinHostPort(host, port)
	c.s.repl.mu.Lock()
	same := c.s.repl.primary == addr
	c.s.repl.mu.Unlock()
	if same {
		c.wr.SimpleString("OK Already connected to specified master")
		return nil
	}
	if err := c.s.setReplicaOf(host + " " + port); err != nil {
		return err
	}
	c.wr.SimpleString("OK")
	return nil
}

// cmdRole answers as Redis does; offsets are sequence numbers
// (doc/replication.md).
func cmdRole(c *conn, _ *command, _ [][]byte) error {
	s := c.s
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	if s.repl.primary != "" {
		host, port, _ := net.SplitHostPort(s.repl.primary)
		p, _ := strconv.Atoi(port)
		state := "connect"
		if s.repl.linkUp.Load() {
			state = "connected"
		}
		c.wr.ArrayHeader(5)
		c.wr.BulkString("slave")
		c.wr.BulkString(host)
		c.wr.Int(int64(p))
		c.wr.BulkString(state)
		c.wr.Int(int64(s.db.VisibleSeq()))
		return nil
	}
	c.wr.ArrayHeader(3)
	c.wr.BulkString("master")
	c.wr.Int(int64(s.db.VisibleSeq()))
	c.wr.ArrayHeader(len(s.repl.replicas))
	for _, r := range s.repl.replicas {
		c.wr.ArrayHeader(3)
		c.wr.BulkString(r.ip)
		c.wr.BulkString(strconv.Itoa(r.port))
		c.wr.BulkString(strconv.FormatUint(r.acked.Load(), 10))
	}
	return nil
}

// cmdRedisSync answers a Redis replica's PSYNC or SYNC: lsmgo sends no
// RDB, so a Redis server cannot replicate from it.
func cmdRedisSync(*conn, *command, [][]byte) error {
	return redisError("ERR lsmgo does not send RDB replication streams: only an lsmgo replica (REPLICAOF on lsmgo, LSMSYNC) can replicate from this server")
}

// cmdReplConf accepts the settings a replica announces, which lsmgo's
// stream needs none of, and REPLCONF FAILOVER from a primary handing
// over (failover.go).
func cmdReplConf(c *conn, _ *command, args [][]byte) error {
	if len(args) == 3 && is(args[1], "FAILOVER") {
		return c.takeOver(string(args[2]))
	}
	if len(args)%2 == 0 {
		return redisError("ERR syntax error")
	}
	c.wr.SimpleString("OK")
	return nil
}
