package server

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestCopyObject checks what TestRedisDiff leaves out: a copied collection
// (a hash, a set, a list) is independent of its source (its elements live under a version of its
// own), keeps the source's expiry, and replaces what REPLACE overwrites
// without any old element showing through; and the OBJECT answers that
// differ from Redis by design (doc/server.md, "OBJECT").
func TestCopyObject(t *testing.T) {
	s := startServer(t, nil)
	bothProtocols(t, s, func(t *testing.T, c *redis.Client) {
		runSteps(t, c, []step{
			{args: []any{"HSET", "h", "a", "1", "b", "2"}, want: int64(2)},
			{args: []any{"PEXPIREAT", "h", "4000000000000"}, want: int64(1)},
			{args: []any{"SADD", "s", "x", "y", "z"}, want: int64(3)},
			{args: []any{"COPY", "h", "h2"}, want: int64(1)},
			{args: []any{"COPY", "h", "h2"}, want: int64(0)},
			{args: []any{"HSET", "h2", "c", "3"}, want: int64(1)},
			{args: []any{"HDEL", "h", "a"}, want: int64(1)},
			{args: []any{"HKEYS", "h"}, want: []any{"b"}},
			{args: []any{"HLEN", "h2"}, want: int64(3)},
			{args: []any{"HGET", "h2", "a"}, want: "1"},
			// REPLACE of a hash by a set: none of the hash's fields remain.
			{args: []any{"COPY", "s", "h2", "REPLACE", "DB", "0"}, want: int64(1)},
			{args: []any{"TYPE", "h2"}, want: "set"},
			{args: []any{"SMEMBERS", "h2"}, want: []any{"x", "y", "z"}},
			{args: []any{"HGET", "h2", "a"}, err: wrongType},
			{args: []any{"TTL", "h2"}, want: int64(-1)},
			{args: []any{"COPY", "h", "h3"}, want: int64(1)},
			{args: []any{"PEXPIRETIME", "h3"}, want: int64(4000000000000)},
			{args: []any{"COPY", "missing", "h3", "REPLACE"}, want: int64(0)},
			{args: []any{"COPY", "h", "h", "REPLACE"}, err: "ERR source and destination objects are the same"},
			{args: []any{"COPY", "h", "x", "DB", "16"}, err: "ERR DB index is out of range"},
			// A list copies with no code of its own, its head slot included.
			{args: []any{"RPUSH", "l", "a", "b", "c"}, want: int64(3)},
			{args: []any{"LPOP", "l"}, want: "a"},
			{args: []any{"COPY", "l", "l2"}, want: int64(1)},
			{args: []any{"LPUSH", "l2", "z"}, want: int64(3)},
			{args: []any{"LRANGE", "l2", "0", "-1"}, want: []any{"z", "b", "c"}},
			{args: []any{"LRANGE", "l", "0", "-1"}, want: []any{"b", "c"}},
			{args: []any{"LINDEX", "l2", "2"}, want: "c"},
			{args: []any{"OBJECT", "ENCODING", "l"}, want: "quicklist"},
			{args: []any{"OBJECT", "ENCODING", "h"}, want: "hashtable"},
			{args: []any{"OBJECT", "ENCODING", "s"}, want: "hashtable"},
			{args: []any{"SET", "n", "12"}, want: "OK"},
			{args: []any{"OBJECT", "ENCODING", "n"}, want: "int"},
			{args: []any{"OBJECT", "REFCOUNT", "n"}, want: int64(1)},
			{args: []any{"OBJECT", "REFCOUNT", "missing"}, want: nil},
			{args: []any{"OBJECT", "IDLETIME", "n"}, want: int64(0)}, // just written
			{args: []any{"OBJECT", "IDLETIME", "missing"}, want: nil},
			{args: []any{"OBJECT", "FREQ", "missing"}, want: nil},
			{args: []any{"OBJECT", "ENCODING"}, err: "ERR wrong number of arguments for 'object|encoding' command"},
			{args: []any{"OBJECT", "LRU", "n"}, err: "ERR unknown subcommand 'LRU'. Try OBJECT HELP."},
		})
		help, err := c.Do(context.Background(), "OBJECT", "HELP").StringSlice()
		if err != nil || len(help) != 6 {
			t.Errorf("OBJECT HELP = %q, %v; want a header and five subcommands", help, err)
		}
	})
}
