package server

import (
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
)

// TestKeyMissRedis compares the "keymiss" events (notify-keyspace-events
// m) of reads that miss, and of reads that hit (none), with
// redis-server's: the lookups that count keyspace_misses fire them.
// Other reads (EXISTS, TYPE, HGETALL, SMEMBERS, STRLEN, GETDEL, ZMSCORE
// …) count no miss here and fire no keymiss, where Redis does.
func TestKeyMissRedis(t *testing.T) {
	sock := startRedis(t)
	s := startServer(t, nil)
	type side struct{ cmd, sub *testutil.Client }
	var sides []side
	for _, dial := range []func() *testutil.Client{
		func() *testutil.Client { return testutil.Dial(t, "unix", sock) },
		func() *testutil.Client { return testutil.Dial(t, "tcp", s.Addr().String()) },
	} {
		sd := side{dial(), dial()}
		mustDo(t, sd.cmd, "CONFIG", "SET", "notify-keyspace-events", "KEm")
		mustDo(t, sd.sub, "PSUBSCRIBE", "__key*")
		mustDo(t, sd.cmd, "MSET", "s", "v", "s2", "v")
		mustDo(t, sd.cmd, "HSET", "h", "f", "v")
		mustDo(t, sd.cmd, "RPUSH", "l", "a")
		mustDo(t, sd.cmd, "ZADD", "z", "1", "m")
		sides = append(sides, sd)
	}
	for _, cmd := range [][]string{
		{"GET", "nokey"}, {"GET", "s"}, {"MGET", "s", "a", "s2", "b"},
		{"HGET", "noh", "f"}, {"HGET", "h", "nof"}, {"HMGET", "noh", "f", "g"}, {"HMGET", "h", "f"},
		{"LINDEX", "nol", "0"}, {"LINDEX", "l", "0"}, {"LRANGE", "nol", "0", "-1"}, {"LPOS", "nol", "a"},
		{"ZSCORE", "noz", "m"}, {"ZSCORE", "z", "m"}, {"XRANGE", "nox", "-", "+"},
	} {
		var rendered []string
		for _, sd := range sides {
			doStrings(t, sd.cmd, cmd)
			mustDo(t, sd.cmd, "PUBLISH", "__keyend", "x")
			var events string
			for {
				m := sd.sub.Read(t)
				if string(m.Array[2].Str) == "__keyend" {
					break
				}
				events += string(m.Array[2].Str) + "=" + string(m.Array[3].Str) + " "
			}
			rendered = append(rendered, events)
		}
		if rendered[0] != rendered[1] {
			t.Errorf("%q:\n lsmgo: %s\n redis: %s", cmd, rendered[1], rendered[0])
		}
	}
}
