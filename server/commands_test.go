package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// step is one command and the reply go-redis should decode, or the exact
// error text.
type step struct {
	args []any
	want any
	err  string
}

func runSteps(t *testing.T, c *redis.Client, steps []step) {
	t.Helper()
	ctx := context.Background()
	for _, st := range steps {
		got, errText := do(ctx, c, st.args...)
		if errText != st.err {
			t.Errorf("%v: error %q, want %q", st.args, errText, st.err)
			continue
		}
		if st.err == "" && !equalReply(got, st.want) {
			t.Errorf("%v: got %#v, want %#v", st.args, got, st.want)
		}
	}
}

// equalReply compares replies, treating RESP3 sets and arrays alike.
func equalReply(got, want any) bool {
	return fmt.Sprint(got) == fmt.Sprint(want)
}

// configReply is how go-redis decodes a one-entry CONFIG GET reply: a
// flat array in RESP2, a map in RESP3.
func configReply(c *redis.Client, name, value string) any {
	if c.Options().Protocol == 2 {
		return []any{name, value}
	}
	return map[any]any{name: value}
}

// bothProtocols runs f once with a RESP2 client and once with RESP3.
func bothProtocols(t *testing.T, s *Server, f func(t *testing.T, c *redis.Client)) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			c := newClient(t, s, proto, nil)
			if err := c.FlushDB(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			f(t, c)
		})
	}
}

func TestStringCommands(t *testing.T) {
	s := startServer(t, nil)
	hour := time.Now().Add(time.Hour)
	bothProtocols(t, s, func(t *testing.T, c *redis.Client) {
		runSteps(t, c, []step{
			{args: []any{"GET", "k"}, want: nil},
			{args: []any{"SET", "k", "v"}, want: "OK"},
			{args: []any{"GET", "k"}, want: "v"},
			{args: []any{"SET", "k", "v2", "NX"}, want: nil},
			{args: []any{"SET", "k", "v2", "XX", "GET"}, want: "v"},
			{args: []any{"SET", "new", "x", "XX"}, want: nil},
			{args: []any{"SET", "k", "v3", "NX", "GET"}, want: "v2"},
			{args: []any{"SET", "k", "v", "NX", "XX"}, err: "ERR syntax error"},
			{args: []any{"SET", "k", "v", "EX", "10", "PX", "100"}, err: "ERR syntax error"},
			{args: []any{"SET", "k", "v", "KEEPTTL", "EX", "1"}, err: "ERR syntax error"},
			{args: []any{"SET", "k", "v", "EX"}, err: "ERR syntax error"},
			{args: []any{"SET", "k", "v", "EX", "0"}, err: "ERR invalid expire time in 'set' command"},
			{args: []any{"SET", "k", "v", "EX", "-5"}, err: "ERR invalid expire time in 'set' command"},
			{args: []any{"SET", "k", "v", "EX", "x"}, err: "ERR value is not an integer or out of range"},
			{args: []any{"SET", "k", "v", "EX", "9223372036854775"}, err: "ERR invalid expire time in 'set' command"},
			{args: []any{"SET", "k", "v", "BOGUS"}, err: "ERR syntax error"},
			{args: []any{"SET", "k"}, err: "ERR wrong number of arguments for 'set' command"},
			{args: []any{"SET", "t", "v", "EX", "100"}, want: "OK"},
			{args: []any{"SET", "t", "w", "KEEPTTL"}, want: "OK"},
			{args: []any{"TTL", "t"}, want: int64(100)},
			{args: []any{"SET", "t", "w"}, want: "OK"},
			{args: []any{"TTL", "t"}, want: int64(-1)},
			{args: []any{"SET", "t", "w", "PX", "100000"}, want: "OK"},
			{args: []any{"TTL", "t"}, want: int64(100)},
			{args: []any{"SET", "t", "w", "EXAT", strconv.FormatInt(hour.Unix(), 10)}, want: "OK"},
			{args: []any{"EXPIRETIME", "t"}, want: hour.Unix()},
			{args: []any{"SET", "t", "w", "PXAT", strconv.FormatInt(hour.UnixMilli(), 10)}, want: "OK"},
			{args: []any{"PEXPIRETIME", "t"}, want: hour.UnixMilli()},
			{args: []any{"SETNX", "nx", "1"}, want: int64(1)},
			{args: []any{"SETNX", "nx", "2"}, want: int64(0)},
			{args: []any{"GET", "nx"}, want: "1"},
			{args: []any{"SETEX", "ex", "100", "v"}, want: "OK"},
			{args: []any{"TTL", "ex"}, want: int64(100)},
			{args: []any{"SETEX", "ex", "0", "v"}, err: "ERR invalid expire time in 'setex' command"},
			{args: []any{"PSETEX", "ex", "-1", "v"}, err: "ERR invalid expire time in 'psetex' command"},
			{args: []any{"PSETEX", "pex", "100000", "v"}, want: "OK"},
			{args: []any{"TTL", "pex"}, want: int64(100)},
			{args: []any{"GETSET", "ex", "new"}, want: "v"},
			{args: []any{"TTL", "ex"}, want: int64(-1)},
			{args: []any{"GETSET", "none", "x"}, want: nil},
			{args: []any{"GETDEL", "none"}, want: "x"},
			{args: []any{"GETDEL", "none"}, want: nil},
			{args: []any{"EXISTS", "none"}, want: int64(0)},
			{args: []any{"GETEX", "ex", "EX", "50"}, want: "new"},
			{args: []any{"TTL", "ex"}, want: int64(50)},
			{args: []any{"GETEX", "ex", "PERSIST"}, want: "new"},
			{args: []any{"TTL", "ex"}, want: int64(-1)},
			{args: []any{"GETEX", "ex"}, want: "new"},
			{args: []any{"GETEX", "missing", "EX", "5"}, want: nil},
			{args: []any{"GETEX", "ex", "EX", "0"}, err: "ERR invalid expire time in 'getex' command"},
			{args: []any{"GETEX", "ex", "PERSIST", "EX", "1"}, err: "ERR syntax error"},
			{args: []any{"GETEX", "ex", "KEEPTTL"}, err: "ERR syntax error"},
			{args: []any{"MSET", "a", "1", "b", "2"}, want: "OK"},
			{args: []any{"MSET", "a", "1", "b"}, err: "ERR wrong number of arguments for 'mset' command"},
			{args: []any{"MGET", "a", "missing", "b"}, want: []any{"1", nil, "2"}},
			{args: []any{"MSETNX", "a", "9", "c", "3"}, want: int64(0)},
			{args: []any{"GET", "c"}, want: nil},
			{args: []any{"MSETNX", "c", "3", "d", "4"}, want: int64(1)},
			{args: []any{"MGET", "c", "d"}, want: []any{"3", "4"}},
			{args: []any{"INCR", "n"}, want: int64(1)},
			{args: []any{"INCRBY", "n", "41"}, want: int64(42)},
			{args: []any{"DECR", "n"}, want: int64(41)},
			{args: []any{"DECRBY", "n", "-9"}, want: int64(50)},
			{args: []any{"INCR", "k"}, err: "ERR value is not an integer or out of range"},
			{args: []any{"INCRBY", "n", "1.5"}, err: "ERR value is not an integer or out of range"},
			{args: []any{"SET", "big", "9223372036854775807"}, want: "OK"},
			{args: []any{"INCR", "big"}, err: "ERR increment or decrement would overflow"},
			{args: []any{"DECRBY", "n", "-9223372036854775808"}, err: "ERR decrement would overflow"},
			{args: []any{"SET", "sp", " 1"}, want: "OK"},
			{args: []any{"INCR", "sp"}, err: "ERR value is not an integer or out of range"},
			{args: []any{"SET", "ttln", "1", "EX", "100"}, want: "OK"},
			{args: []any{"INCR", "ttln"}, want: int64(2)},
			{args: []any{"TTL", "ttln"}, want: int64(100)},
			{args: []any{"INCRBYFLOAT", "f", "10.5"}, want: "10.5"},
			{args: []any{"INCRBYFLOAT", "f", "0.1"}, want: "10.6"},
			{args: []any{"INCRBYFLOAT", "f", "-5.6"}, want: "5"},
			{args: []any{"INCRBYFLOAT", "f", "5.0e3"}, want: "5005"},
			{args: []any{"INCRBYFLOAT", "f", "abc"}, err: "ERR value is not a valid float"},
			{args: []any{"INCRBYFLOAT", "f", "nan"}, err: "ERR value is not a valid float"},
			{args: []any{"INCRBYFLOAT", "f", "inf"}, err: "ERR increment would produce NaN or Infinity"},
			{args: []any{"INCRBYFLOAT", "k", "1"}, err: "ERR value is not a valid float"},
			{args: []any{"APPEND", "ap", "Hello"}, want: int64(5)},
			{args: []any{"APPEND", "ap", " World"}, want: int64(11)},
			{args: []any{"STRLEN", "ap"}, want: int64(11)},
			{args: []any{"STRLEN", "missing"}, want: int64(0)},
			{args: []any{"GETRANGE", "ap", "0", "4"}, want: "Hello"},
			{args: []any{"GETRANGE", "ap", "-5", "-1"}, want: "World"},
			{args: []any{"GETRANGE", "ap", "6", "100"}, want: "World"},
			{args: []any{"GETRANGE", "ap", "5", "2"}, want: ""},
			{args: []any{"GETRANGE", "ap", "-1", "-5"}, want: ""},
			{args: []any{"GETRANGE", "missing", "0", "-1"}, want: ""},
			{args: []any{"SUBSTR", "ap", "0", "0"}, want: "H"},
			{args: []any{"GETRANGE", "ap", "x", "1"}, err: "ERR value is not an integer or out of range"},
			{args: []any{"SETRANGE", "ap", "6", "Redis"}, want: int64(11)},
			{args: []any{"GET", "ap"}, want: "Hello Redis"},
			{args: []any{"SETRANGE", "pad", "3", "x"}, want: int64(4)},
			{args: []any{"GET", "pad"}, want: "\x00\x00\x00x"},
			{args: []any{"SETRANGE", "nokey", "5", ""}, want: int64(0)},
			{args: []any{"EXISTS", "nokey"}, want: int64(0)},
			{args: []any{"SETRANGE", "ap", "-1", "x"}, err: "ERR offset is out of range"},
			{args: []any{"SETRANGE", "ap", "536870911", "xx"}, err: "ERR string exceeds maximum allowed size (proto-max-bulk-len)"},
		})
	})
}

func TestKeyCommands(t *testing.T) {
	s := startServer(t, nil)
	bothProtocols(t, s, func(t *testing.T, c *redis.Client) {
		future := time.Now().Add(time.Hour)
		runSteps(t, c, []step{
			{args: []any{"MSET", "a", "1", "b", "2", "c", "3"}, want: "OK"},
			{args: []any{"EXISTS", "a", "b", "a", "zz"}, want: int64(3)},
			{args: []any{"DEL", "a", "a", "zz"}, want: int64(1)},
			{args: []any{"UNLINK", "b", "c"}, want: int64(2)},
			{args: []any{"DBSIZE"}, want: int64(0)},
			{args: []any{"TYPE", "a"}, want: "none"},
			{args: []any{"SET", "a", "1"}, want: "OK"},
			{args: []any{"TYPE", "a"}, want: "string"},
			{args: []any{"RENAME", "zz", "y"}, err: "ERR no such key"},
			{args: []any{"EXPIRE", "a", "100"}, want: int64(1)},
			{args: []any{"RENAME", "a", "b"}, want: "OK"},
			{args: []any{"EXISTS", "a"}, want: int64(0)},
			{args: []any{"TTL", "b"}, want: int64(100)},
			{args: []any{"RENAME", "b", "b"}, want: "OK"},
			{args: []any{"SET", "c", "3"}, want: "OK"},
			{args: []any{"RENAMENX", "b", "c"}, want: int64(0)},
			{args: []any{"RENAMENX", "b", "b"}, want: int64(0)},
			{args: []any{"RENAMENX", "b", "d"}, want: int64(1)},
			{args: []any{"GET", "d"}, want: "1"},
			{args: []any{"TTL", "nokey"}, want: int64(-2)},
			{args: []any{"PTTL", "c"}, want: int64(-1)},
			{args: []any{"EXPIRETIME", "c"}, want: int64(-1)},
			{args: []any{"PEXPIRETIME", "nokey"}, want: int64(-2)},
			{args: []any{"EXPIRE", "nokey", "10"}, want: int64(0)},
			{args: []any{"EXPIRE", "c", "10", "XX"}, want: int64(0)},
			{args: []any{"EXPIRE", "c", "10", "GT"}, want: int64(0)},
			{args: []any{"EXPIRE", "c", "10", "NX"}, want: int64(1)},
			{args: []any{"EXPIRE", "c", "20", "NX"}, want: int64(0)},
			{args: []any{"EXPIRE", "c", "5", "GT"}, want: int64(0)},
			{args: []any{"EXPIRE", "c", "20", "GT"}, want: int64(1)},
			{args: []any{"EXPIRE", "c", "30", "LT"}, want: int64(0)},
			{args: []any{"EXPIRE", "c", "15", "LT", "XX"}, want: int64(1)},
			{args: []any{"TTL", "c"}, want: int64(15)},
			{args: []any{"EXPIRE", "c", "10", "NX", "XX"}, err: "ERR NX and XX, GT or LT options at the same time are not compatible"},
			{args: []any{"EXPIRE", "c", "10", "GT", "LT"}, err: "ERR GT and LT options at the same time are not compatible"},
			{args: []any{"EXPIRE", "c", "10", "FOO"}, err: "ERR Unsupported option FOO"},
			{args: []any{"EXPIRE", "c", "x"}, err: "ERR value is not an integer or out of range"},
			{args: []any{"EXPIRE", "c", "9223372036854775807"}, err: "ERR invalid expire time in 'expire' command"},
			{args: []any{"PEXPIRE", "c", "100000"}, want: int64(1)},
			{args: []any{"TTL", "c"}, want: int64(100)},
			{args: []any{"EXPIREAT", "c", strconv.FormatInt(future.Unix(), 10)}, want: int64(1)},
			{args: []any{"EXPIRETIME", "c"}, want: future.Unix()},
			{args: []any{"PEXPIREAT", "c", strconv.FormatInt(future.UnixMilli(), 10)}, want: int64(1)},
			{args: []any{"PEXPIRETIME", "c"}, want: future.UnixMilli()},
			{args: []any{"PERSIST", "c"}, want: int64(1)},
			{args: []any{"PERSIST", "c"}, want: int64(0)},
			{args: []any{"PERSIST", "nokey"}, want: int64(0)},
			{args: []any{"TTL", "c"}, want: int64(-1)},
			{args: []any{"EXPIRE", "c", "-1"}, want: int64(1)},
			{args: []any{"EXISTS", "c"}, want: int64(0)},
			{args: []any{"PEXPIREAT", "d", "1"}, want: int64(1)},
			{args: []any{"GET", "d"}, want: nil},
			{args: []any{"RANDOMKEY"}, want: nil},
			{args: []any{"MSET", "user:1", "a", "user:2", "b", "item:1", "c", "u", "d"}, want: "OK"},
			{args: []any{"KEYS", "user:*"}, want: []any{"user:1", "user:2"}},
			{args: []any{"KEYS", "*"}, want: []any{"item:1", "u", "user:1", "user:2"}},
			{args: []any{"KEYS", "u?er:[12]"}, want: []any{"user:1", "user:2"}},
			{args: []any{"KEYS", "nomatch*"}, want: []any{}},
			{args: []any{"DBSIZE"}, want: int64(4)},
			{args: []any{"SCAN", "x"}, err: "ERR invalid cursor"},
			{args: []any{"SCAN", "0", "COUNT", "0"}, err: "ERR syntax error"},
			{args: []any{"SCAN", "0", "COUNT"}, err: "ERR syntax error"},
			{args: []any{"SCAN", "0", "COUNT", "x"}, err: "ERR value is not an integer or out of range"},
			{args: []any{"SCAN", "12345"}, err: "ERR invalid cursor"},
			{args: []any{"SCAN", "0", "TYPE", "hash"}, want: []any{"0", []any{}}},
			{args: []any{"SCAN", "0", "MATCH", "user:*", "COUNT", "100", "TYPE", "string"}, want: []any{"0", []any{"user:1", "user:2"}}},
			{args: []any{"FLUSHDB", "bogus"}, err: "ERR syntax error"},
			{args: []any{"FLUSHALL", "ASYNC"}, want: "OK"},
			{args: []any{"DBSIZE"}, want: int64(0)},
			{args: []any{"KEYS", "*"}, want: []any{}},
		})
	})
}

func TestScanVisitsEveryKeyOnce(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, s, 3, nil)
	ctx := context.Background()
	const n = 500
	want := map[string]bool{}
	pipe := c.Pipeline()
	for i := range n {
		k := fmt.Sprintf("key:%04d", i)
		want[k] = true
		pipe.Set(ctx, k, i, 0)
	}
	pipe.Set(ctx, "other", 1, 0)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	var cursor uint64
	calls := 0
	for {
		keys, next, err := c.Scan(ctx, cursor, "key:*", 37).Result()
		if err != nil {
			t.Fatal(err)
		}
		calls++
		for _, k := range keys {
			seen[k]++
		}
		// A concurrent writer must not disturb the scan.
		c.Set(ctx, fmt.Sprintf("key:%04d", n+calls), "late", 0)
		if next == 0 {
			break
		}
		if calls > n {
			t.Fatal("scan does not terminate")
		}
		cursor = next
	}
	for k := range want {
		if seen[k] != 1 {
			t.Errorf("key %s seen %d times", k, seen[k])
		}
	}
	if seen["other"] != 0 {
		t.Errorf("MATCH returned a non-matching key")
	}
	// The iterator helper walks all keys too.
	count := 0
	it := c.Scan(ctx, 0, "", 10).Iterator()
	for it.Next(ctx) {
		count++
	}
	if err := it.Err(); err != nil || count < n+1 {
		t.Errorf("ScanIterator: %d keys, err %v", count, err)
	}
	// RANDOMKEY returns existing keys.
	for range 20 {
		k, err := c.RandomKey(ctx).Result()
		if err != nil || (!want[k] && k != "other" && !strings.HasPrefix(k, "key:")) {
			t.Fatalf("RANDOMKEY = %q, %v", k, err)
		}
	}
}

func TestExpiryHidesKeys(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	c.Set(ctx, "short", "v", time.Hour)
	c.Set(ctx, "long", "v", time.Hour)
	c.Set(ctx, "forever", "v", 0)
	info, err := c.Info(ctx, "keyspace").Result()
	if err != nil || !strings.Contains(info, "db0:keys=3,expires=2,avg_ttl=0") {
		t.Fatalf("INFO keyspace = %q, %v", info, err)
	}
	// A loaded machine may take longer than the 50 ms between two
	// commands, so a miss only counts as early expiry when it came
	// sooner; the server keeps expiry times in whole milliseconds.
	set := time.Now()
	c.Set(ctx, "short", "v", 50*time.Millisecond)
	if v, _ := c.Get(ctx, "short").Result(); v != "v" && time.Since(set) < 49*time.Millisecond {
		t.Fatalf("short expired after %v of its 50ms", time.Since(set))
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.Exists(ctx, "short").Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatal("key did not expire")
		}
		time.Sleep(20 * time.Millisecond)
	}
	eq(t, "GET expired", c.Get(ctx, "short").Err(), redis.Nil)
	eq(t, "TTL expired", c.TTL(ctx, "short").Val(), time.Duration(-2))
	eq(t, "DBSIZE", c.DBSize(ctx).Val(), int64(2))
	eq(t, "KEYS", c.Keys(ctx, "*").Val(), []string{"forever", "long"})
	eq(t, "INCR on expired", c.Incr(ctx, "short").Val(), int64(1))
	eq(t, "TTL after INCR", c.TTL(ctx, "short").Val(), time.Duration(-1))
}

func TestConnectionCommands(t *testing.T) {
	s := startServer(t, nil)
	bothProtocols(t, s, func(t *testing.T, c *redis.Client) {
		runSteps(t, c, []step{
			{args: []any{"PING"}, want: "PONG"},
			{args: []any{"PING", "hi"}, want: "hi"},
			{args: []any{"PING", "a", "b"}, err: "ERR wrong number of arguments for 'ping' command"},
			{args: []any{"ECHO", "x y"}, want: "x y"},
			{args: []any{"ECHO"}, err: "ERR wrong number of arguments for 'echo' command"},
			{args: []any{"SELECT", "0"}, want: "OK"},
			{args: []any{"SELECT", "16"}, err: "ERR DB index is out of range"},
			{args: []any{"SELECT", "x"}, err: "ERR value is not an integer or out of range"},
			{args: []any{"HELLO", "4"}, err: "NOPROTO unsupported protocol version"},
			{args: []any{"HELLO", "x"}, err: "ERR Protocol version is not an integer or out of range"},
			{args: []any{"HELLO", "3", "BOGUS"}, err: "ERR Syntax error in HELLO option 'BOGUS'"},
			{args: []any{"AUTH", "pw"}, err: "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"},
			{args: []any{"AUTH", "default", "anything"}, want: "OK"},
			{args: []any{"AUTH", "bob", "pw"}, err: "WRONGPASS invalid username-password pair or user is disabled."},
			{args: []any{"FOO", "a", "b"}, err: "ERR unknown command 'FOO', with args beginning with: 'a' 'b' "},
			{args: []any{"CONFIG"}, err: "ERR wrong number of arguments for 'config' command"},
			{args: []any{"CONFIG", "FOO"}, err: "ERR unknown subcommand 'FOO'. Try CONFIG HELP."},
			{args: []any{"CONFIG", "GET"}, err: "ERR wrong number of arguments for 'config|get' command"},
			{args: []any{"CLIENT", "xyz"}, err: "ERR unknown subcommand 'xyz'. Try CLIENT HELP."},
			{args: []any{"CLIENT", "SETNAME", "a b"}, err: "ERR Client names cannot contain spaces, newlines or special characters."},
			{args: []any{"CLIENT", "SETNAME", "worker-1"}, want: "OK"},
			{args: []any{"CLIENT", "GETNAME"}, want: "worker-1"},
			{args: []any{"CLIENT", "SETINFO", "LIB-NAME", "x y"}, err: "ERR lib-name cannot contain spaces, newlines or special characters."},
			{args: []any{"CLIENT", "SETINFO", "COLOR", "x"}, err: "ERR Unrecognized option 'COLOR'"},
			{args: []any{"CONFIG", "SET", "nope", "1"}, err: "ERR Unknown option or number of arguments for CONFIG SET - 'nope'"},
			{args: []any{"CONFIG", "SET", "maxclients", "abc"}, err: "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer"},
			{args: []any{"CONFIG", "SET", "appendfsync", "always"}, err: "ERR CONFIG SET failed (possibly related to argument 'appendfsync') - can't set immutable config: it needs a restart"},
			{args: []any{"CONFIG", "SET", "max-concurrent-compactions", "3"}, want: "OK"},
			{args: []any{"CONFIG", "GET", "max-concurrent-compactions"}, want: configReply(c, "max-concurrent-compactions", "3")},
			{args: []any{"CONFIG", "SET", "appendonly", "no"}, err: "ERR CONFIG SET failed (possibly related to argument 'appendonly') - can't set immutable config"},
			{args: []any{"CONFIG", "SET", "timeout", "5", "timeout", "6"}, err: "ERR CONFIG SET failed (possibly related to argument 'timeout') - duplicate parameter"},
			{args: []any{"CONFIG", "SET", "slowlog-max-len", "10", "maxclients", "x"}, err: "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer"},
			{args: []any{"CONFIG", "SET", "slowlog-max-len", "10", "maxclients", "500"}, want: "OK"},
			{args: []any{"CONFIG", "GET", "maxclients"}, want: configReply(c, "maxclients", "500")},
			{args: []any{"CONFIG", "SET", "SLOWLOG-MAX-LEN", "128", "maxclients", "10000"}, want: "OK"},
			{args: []any{"CONFIG", "SET", "client-query-buffer-limit", "64mb"}, want: "OK"},
			{args: []any{"CONFIG", "GET", "client-query-buffer-limit"}, want: configReply(c, "client-query-buffer-limit", "67108864")},
			{args: []any{"CONFIG", "RESETSTAT"}, want: "OK"},
			{args: []any{"DBSIZE", "x"}, err: "ERR wrong number of arguments for 'dbsize' command"},
			{args: []any{"SLOWLOG", "GET", "-2"}, err: "ERR count should be greater than or equal to -1"},
			// With every command logged, the PING enters the slow log.
			{args: []any{"CONFIG", "SET", "slowlog-log-slower-than", "0"}, want: "OK"},
			{args: []any{"PING", "slowlog-probe"}, want: "slowlog-probe"},
			// With logging off nothing can enter it, not even a RESET
			// slower than the threshold on a loaded machine, which Redis
			// logs too (after the reset).
			{args: []any{"CONFIG", "SET", "slowlog-log-slower-than", "-1"}, want: "OK"},
		})
		ctx := context.Background()
		if entries, err := c.SlowLogGet(ctx, -1).Result(); err != nil || !slices.ContainsFunc(entries, func(e redis.SlowLog) bool {
			return slices.Equal(e.Args, []string{"PING", "slowlog-probe"})
		}) {
			t.Errorf("SLOWLOG GET -1 = %v, %v; want an entry for PING slowlog-probe", entries, err)
		}
		runSteps(t, c, []step{
			{args: []any{"SLOWLOG", "RESET"}, want: "OK"},
			{args: []any{"SLOWLOG", "LEN"}, want: int64(0)},
			{args: []any{"SLOWLOG", "GET"}, want: []any{}},
			{args: []any{"CONFIG", "SET", "slowlog-log-slower-than", "10000"}, want: "OK"},
			{args: []any{"COMMAND", "COUNT"}, want: int64(len(commands))},
		})
		// Maps come back as flat arrays in RESP2; go-redis decodes both.
		cfg, err := c.ConfigGet(ctx, "*slowlog*").Result()
		if err != nil || cfg["slowlog-log-slower-than"] != "10000" || len(cfg) != 2 {
			t.Errorf("CONFIG GET *slowlog* = %v, %v", cfg, err)
		}
		if v, err := c.Time(ctx).Result(); err != nil || time.Since(v).Abs() > time.Minute {
			t.Errorf("TIME = %v, %v", v, err)
		}
		id, err := c.ClientID(ctx).Result()
		if err != nil || id <= 0 {
			t.Errorf("CLIENT ID = %d, %v", id, err)
		}
		list, err := c.ClientList(ctx).Result()
		if err != nil || !strings.Contains(list, "id="+strconv.FormatInt(id, 10)+" ") || !strings.Contains(list, "name=worker-1") {
			t.Errorf("CLIENT LIST = %q, %v", list, err)
		}
		ci, err := c.ClientInfo(ctx).Result()
		if err != nil || ci.ID != id {
			t.Errorf("CLIENT INFO = %+v, %v", ci, err)
		}
		cmds, err := c.Command(ctx).Result()
		if err != nil || cmds["get"] == nil || cmds["get"].Arity != 2 || !cmds["get"].ReadOnly || cmds["set"].FirstKeyPos != 1 {
			t.Errorf("COMMAND = %v, %v", cmds["get"], err)
		}
		docs, err := c.Do(ctx, "COMMAND", "DOCS", "get", "config").Result()
		if text := fmt.Sprint(docs); err != nil || !strings.Contains(text, "Returns the string value of a key.") || !strings.Contains(text, "config|get") {
			t.Errorf("COMMAND DOCS = %v, %v", docs, err)
		}
		info, err := c.Info(ctx).Result()
		for _, want := range []string{"# Server", "redis_version:" + Version, "# Clients", "connected_clients:", "# Memory",
			"# Persistence", "aof_enabled:1", "# Stats", "total_commands_processed:", "# Keyspace", "# Lsmgo", "level0:files="} {
			if !strings.Contains(info, want) {
				t.Errorf("INFO lacks %q (err %v)", want, err)
			}
		}
		if info, _ := c.Info(ctx, "clients", "stats").Result(); strings.Contains(info, "# Server") || !strings.Contains(info, "# Stats") {
			t.Errorf("INFO clients stats = %q", info)
		}
	})
}

func TestHelloAndReset(t *testing.T) {
	s := startServer(t, nil)
	r := dialRaw(t, s)
	r.send("HELLO 3 SETNAME me\r\n")
	got := r.reply()
	if !strings.HasPrefix(got, "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n") || !strings.Contains(got, "$5\r\nproto\r\n:3\r\n") {
		t.Errorf("HELLO 3 = %q", got)
	}
	r.send("GET missing\r\n")
	eq(t, "RESP3 null", r.reply(), "_\r\n")
	r.send("CLIENT GETNAME\r\n")
	eq(t, "name", r.reply(), "$2\r\nme\r\n")
	r.send("RESET\r\n")
	eq(t, "RESET", r.reply(), "+RESET\r\n")
	r.send("GET missing\r\n")
	eq(t, "RESP2 null after RESET", r.reply(), "$-1\r\n")
	r.send("CLIENT GETNAME\r\n")
	eq(t, "name after RESET", r.reply(), "$-1\r\n")
	r.send("QUIT\r\n")
	eq(t, "QUIT", r.reply(), "+OK\r\n")
	r.expectClosed("")
}

func TestAuth(t *testing.T) {
	s := startServer(t, func(c *Config) { c.RequirePass = "s3cret" })
	ctx := context.Background()

	anon := newClient(t, s, 2, nil)
	if err := anon.Get(ctx, "k").Err(); err == nil || err.Error() != "NOAUTH Authentication required." {
		t.Errorf("GET without AUTH: %v", err)
	}
	r := dialRaw(t, s)
	r.send("PING\r\nFOO\r\nGET\r\nHELLO 3\r\nAUTH wrong\r\n")
	eq(t, "PING", r.reply(), "-NOAUTH Authentication required.\r\n")
	eq(t, "unknown before auth", r.reply(), "-ERR unknown command 'FOO', with args beginning with: \r\n")
	eq(t, "arity before auth", r.reply(), "-ERR wrong number of arguments for 'get' command\r\n")
	eq(t, "HELLO", r.reply(), "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n")
	eq(t, "AUTH wrong", r.reply(), "-WRONGPASS invalid username-password pair or user is disabled.\r\n")
	// Unauthenticated clients may not send big requests (Redis' limit).
	r.send("*20\r\n")
	r.expectClosed("-ERR Protocol error: unauthenticated multibulk length\r\n")

	for _, proto := range []int{2, 3} {
		c := newClient(t, s, proto, func(o *redis.Options) { o.Password = "s3cret" })
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatalf("RESP%d with password: %v", proto, err)
		}
	}
	c := newClient(t, s, 2, func(o *redis.Options) { o.Username, o.Password = "default", "s3cret" })
	eq(t, "GET with ACL-style auth", c.Get(ctx, "k").Val(), "v")

	// The password changes live; connected clients stay authenticated.
	if err := c.ConfigSet(ctx, "requirepass", "other").Err(); err != nil {
		t.Fatal(err)
	}
	eq(t, "still authenticated", c.Get(ctx, "k").Val(), "v")
	if err := newClient(t, s, 2, func(o *redis.Options) { o.Password = "s3cret" }).Ping(ctx).Err(); err == nil {
		t.Error("old password still accepted")
	}
	eq(t, "new password", newClient(t, s, 3, func(o *redis.Options) { o.Password = "other" }).Ping(ctx).Val(), "PONG")
	if err := c.ConfigSet(ctx, "requirepass", "").Err(); err != nil {
		t.Fatal(err)
	}
	eq(t, "no password", newClient(t, s, 2, nil).Ping(ctx).Val(), "PONG")
}

// TestProtectedMode checks that the password of a server listening on
// every interface cannot be removed.
func TestProtectedMode(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Addr, c.RequirePass = "0.0.0.0:0", "pw" })
	c := newClient(t, s, 2, func(o *redis.Options) {
		o.Addr = "127.0.0.1:" + portOf(s.Addr().String())
		o.Password = "pw"
	})
	err := c.ConfigSet(context.Background(), "requirepass", "").Err()
	if err == nil || !strings.Contains(err.Error(), "without requirepass") {
		t.Errorf("clearing the password on 0.0.0.0: %v", err)
	}
	if err := c.ConfigSet(context.Background(), "requirepass", "new").Err(); err != nil {
		t.Errorf("changing the password: %v", err)
	}
}

// TestPipelinedWritesInOrder sends pipelines that mix queued SETs with
// commands reading what they wrote, in one write, and checks every reply.
func TestPipelinedWritesInOrder(t *testing.T) {
	s := startServer(t, nil)
	r := dialRaw(t, s)
	var req, want strings.Builder
	for i := range 300 {
		fmt.Fprintf(&req, "SET k%d v%d\r\n", i%7, i)
		want.WriteString("+OK\r\n")
		if i%50 == 49 {
			fmt.Fprintf(&req, "GET k%d\r\n", i%7)
			fmt.Fprintf(&want, "$%d\r\nv%d\r\n", len(strconv.Itoa(i))+1, i)
		}
	}
	req.WriteString("SET x\r\nSET a b\r\nINCR a\r\nSET n 1\r\nINCR n\r\n")
	want.WriteString("-ERR wrong number of arguments for 'set' command\r\n+OK\r\n-ERR value is not an integer or out of range\r\n+OK\r\n:2\r\n")
	r.send(req.String())
	var got strings.Builder
	for got.Len() < want.Len() {
		got.WriteString(r.reply())
	}
	if got.String() != want.String() {
		t.Fatalf("pipeline replies differ:\n got %q\nwant %q", got.String(), want.String())
	}

	c := newClient(t, s, 3, nil)
	ctx := context.Background()
	pipe := c.Pipeline()
	var sets []*redis.StatusCmd
	var incrs []*redis.IntCmd
	for i := range 1000 {
		sets = append(sets, pipe.Set(ctx, fmt.Sprintf("p%d", i), i, 0))
		incrs = append(incrs, pipe.Incr(ctx, "counter"))
	}
	mget := pipe.MGet(ctx, "p0", "p999", "nope")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range sets {
		if sets[i].Val() != "OK" || incrs[i].Val() != int64(i+1) {
			t.Fatalf("reply %d: %v %v", i, sets[i], incrs[i])
		}
	}
	eq(t, "MGET", mget.Val(), []any{"0", "999", nil})
}

// TestConcurrentReadModifyWrite checks that INCR, APPEND and SETs from
// many connections never lose an update.
func TestConcurrentReadModifyWrite(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	const workers, each = 8, 100
	done := make(chan error, workers)
	for w := range workers {
		c := newClient(t, s, 2, nil)
		go func() {
			for i := range each {
				pipe := c.Pipeline()
				pipe.Incr(ctx, "n")
				pipe.Append(ctx, "log", "x")
				pipe.Set(ctx, fmt.Sprintf("w%d", w), i, 0)
				pipe.IncrByFloat(ctx, "f", 0.5)
				if _, err := pipe.Exec(ctx); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range workers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(t, s, 2, nil)
	eq(t, "INCR total", c.Get(ctx, "n").Val(), strconv.Itoa(workers*each))
	eq(t, "APPEND total", c.StrLen(ctx, "log").Val(), int64(workers*each))
	eq(t, "INCRBYFLOAT total", c.Get(ctx, "f").Val(), strconv.Itoa(workers*each/2))
	for w := range workers {
		eq(t, "last SET", c.Get(ctx, fmt.Sprintf("w%d", w)).Val(), strconv.Itoa(each-1))
	}
}

// TestRandomOpsAgainstModel runs random string and key commands against
// the server and a map, comparing every reply.
func TestRandomOpsAgainstModel(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := newRand(seed)
	s := startServer(t, nil)
	c := newClient(t, s, 3, nil)
	ctx := context.Background()
	model := map[string]string{}
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for step := range 2000 {
		k, k2 := keys[rng.IntN(len(keys))], keys[rng.IntN(len(keys))]
		v := strconv.Itoa(rng.IntN(100))
		_, has := model[k]
		var got, want any
		switch op := rng.IntN(9); op {
		case 0:
			got, want = c.Set(ctx, k, v, 0).Val(), "OK"
			model[k] = v
		case 1:
			got, want = c.Get(ctx, k).Val(), model[k]
		case 2:
			got, want = c.Del(ctx, k, k2).Val(), int64(len(keysIn(model, k, k2)))
			delete(model, k)
			delete(model, k2)
		case 3:
			got, want = c.SetNX(ctx, k, v, 0).Val(), !has
			if !has {
				model[k] = v
			}
		case 4:
			got, want = c.Append(ctx, k, v).Val(), int64(len(model[k]+v))
			model[k] += v
		case 5:
			got, want = c.Exists(ctx, k).Val(), int64(len(keysIn(model, k)))
		case 6:
			err := c.Rename(ctx, k, k2).Err()
			got, want = err == nil, has
			if has {
				val := model[k]
				delete(model, k)
				model[k2] = val
			}
		case 7:
			//lint:ignore SA1019 GETSET, deprecated in Redis, is the command under test.
			got, want = c.GetSet(ctx, k, v).Val(), model[k]
			model[k] = v
		case 8:
			got, want = c.DBSize(ctx).Val(), int64(len(model))
		}
		if !equalReply(got, want) {
			t.Fatalf("step %d (seed %d): got %v, want %v", step, seed, got, want)
		}
	}
	all, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(all)
	eq(t, "final keys", all, slices.Sorted(maps.Keys(model)))
}

func TestSlowlog(t *testing.T) {
	s := startServer(t, func(c *Config) { c.SlowlogSlowerThan = 0; c.SlowlogMaxLen = 3 })
	for _, proto := range []int{2, 3} {
		c := newClient(t, s, proto, nil)
		ctx := context.Background()
		c.SlowLogReset(ctx)
		c.Do(ctx, "CLIENT", "SETNAME", "slowpoke")
		c.Set(ctx, "k", strings.Repeat("v", 200), 0)
		c.Do(ctx, "MGET", "k", "k", "k")
		entries, err := c.SlowLogGet(ctx, -1).Result()
		if err != nil || len(entries) != 3 {
			t.Fatalf("RESP%d SLOWLOG GET: %v, %v", proto, entries, err)
		}
		newest := entries[0]
		eq(t, "newest entry", newest.Args, []string{"MGET", "k", "k", "k"})
		eq(t, "client name", newest.ClientName, "slowpoke")
		eq(t, "long argument", entries[1].Args[2], strings.Repeat("v", 128)+"... (72 more bytes)")
		if newest.ID <= entries[1].ID || time.Since(newest.Time) > time.Minute {
			t.Errorf("entry ids/times: %+v", entries)
		}
		eq(t, "SLOWLOG LEN", c.Do(ctx, "SLOWLOG", "LEN").Val(), int64(3))
	}
}

// TestPipelinedReadsAgainstModel sends random pipelines that mix GETs (which
// share one engine view while more input is buffered) with writes of every
// kind on a few keys, and checks each reply against a map: a GET must see
// every earlier write of its own pipeline.
func TestPipelinedReadsAgainstModel(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := newRand(seed)
	s := startServer(t, nil)
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	model := map[string]string{}
	keys := []string{"a", "b", "c", "d"}
	for round := range 200 {
		pipe := c.Pipeline()
		type check struct {
			cmd  redis.Cmder
			want string
		}
		var checks []check
		for range 1 + rng.IntN(40) {
			k := keys[rng.IntN(len(keys))]
			switch rng.IntN(6) {
			case 0, 1, 2:
				cur, ok := model[k]
				if !ok {
					cur = "(nil)"
				}
				checks = append(checks, check{pipe.Get(ctx, k), cur})
			case 3:
				v := strconv.Itoa(rng.IntN(1000))
				pipe.Set(ctx, k, v, 0)
				model[k] = v
			case 4:
				pipe.Del(ctx, k)
				delete(model, k)
			default:
				pipe.Append(ctx, k, "x")
				model[k] += "x"
			}
		}
		pipe.Exec(ctx)
		for i, ch := range checks {
			got, err := ch.cmd.(*redis.StringCmd).Result()
			if errors.Is(err, redis.Nil) {
				got = "(nil)"
			} else if err != nil {
				t.Fatalf("seed %d round %d: GET %d: %v", seed, round, i, err)
			}
			if got != ch.want {
				t.Fatalf("seed %d round %d: GET %d = %q, want %q", seed, round, i, got, ch.want)
			}
		}
	}
}

// TestPipelinedDeferredWrites mixes the writes that join a pipeline's
// pending batch (SET, with or without EX) with SETs that leave it (NX,
// GET: they read) and SETs refused before they write, and checks each
// reply, its order, and that every command sees the writes before it.
func TestPipelinedDeferredWrites(t *testing.T) {
	s := startServer(t, nil)
	r := dialRaw(t, s)
	r.send("SET a 1\r\nSET b 2 EX 100\r\nSET c 3 EX nope\r\nSET a 4\r\nSET a 5 NX\r\nSET b 6 GET\r\nSET d 7\r\nGET a\r\nGET b\r\nGET d\r\nTTL b\r\n")
	want := []string{"+OK\r\n", "+OK\r\n", "-ERR value is not an integer or out of range\r\n", "+OK\r\n",
		"$-1\r\n", "$1\r\n2\r\n", "+OK\r\n", "$1\r\n4\r\n", "$1\r\n6\r\n", "$1\r\n7\r\n", ":-1\r\n"}
	for i, w := range want {
		eq(t, fmt.Sprintf("reply %d", i), r.reply(), w)
	}
}
