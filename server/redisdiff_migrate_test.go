package server

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
)

// TestMigrateRedis moves keys of every type with MIGRATE from this server
// to redis-server and back, with KEYS, COPY, REPLACE and AUTH, and checks
// the values that arrive, what stays behind, and the errors.
func TestMigrateRedis(t *testing.T) {
	sock, redisAddr := testutil.StartRedisTCP(t)
	s := startServer(t, nil)
	redisConn := testutil.Dial(t, "unix", sock)
	ours := testutil.Dial(t, "tcp", s.Addr().String())
	rHost, rPort, _ := net.SplitHostPort(redisAddr)
	oHost, oPort, _ := net.SplitHostPort(s.Addr().String())

	values := randomDumpValues(newRand(7))
	var keys []string
	want := map[string]string{}
	for i, v := range values {
		key := fmt.Sprintf("mig:%d", i)
		keys = append(keys, key)
		for _, cmd := range v.build(key) {
			mustDo(t, ours, cmd...)
		}
		want[key] = readBack(t, ours, key)
	}
	mustDo(t, ours, "PEXPIRE", keys[0], "100000")

	// One key, then the rest with KEYS; without COPY they leave.
	if got := mustDo(t, ours, "MIGRATE", rHost, rPort, keys[0], "0", "5000"); string(got.Str) != "OK" {
		t.Fatalf("MIGRATE one key: %+v", got)
	}
	if pttl := mustDo(t, redisConn, "PTTL", keys[0]).Int; pttl <= 0 || pttl > 100000 {
		t.Fatalf("migrated key's PTTL on redis = %d", pttl)
	}
	args := append([]string{"MIGRATE", rHost, rPort, "", "0", "5000", "KEYS"}, keys[1:]...)
	args = append(args, "missing")
	if got := mustDo(t, ours, args...); string(got.Str) != "OK" {
		t.Fatalf("MIGRATE KEYS: %+v", got)
	}
	for _, key := range keys {
		if got := readBack(t, redisConn, key); got != want[key] {
			t.Fatalf("%s on redis after MIGRATE: %.200s, want %.200s", key, got, want[key])
		}
		if n := mustDo(t, ours, "EXISTS", key).Int; n != 0 {
			t.Fatalf("%s still here after MIGRATE without COPY", key)
		}
	}
	if got := mustDo(t, ours, "MIGRATE", rHost, rPort, keys[0], "0", "5000"); string(got.Str) != "NOKEY" {
		t.Fatalf("MIGRATE of a missing key: %+v", got)
	}

	// Back from Redis, with a password on our side and COPY: Redis keeps
	// them. A second MIGRATE without REPLACE meets BUSYKEY.
	mustDo(t, ours, "CONFIG", "SET", "requirepass", "pw")
	mustDo(t, ours, "AUTH", "pw")
	args = append([]string{"MIGRATE", oHost, oPort, "", "0", "5000", "COPY", "AUTH", "pw", "KEYS"}, keys...)
	if got := mustDo(t, redisConn, args...); string(got.Str) != "OK" {
		t.Fatalf("redis MIGRATE to lsmgo: %+v", got)
	}
	for _, key := range keys {
		if got := readBack(t, ours, key); got != want[key] {
			t.Fatalf("%s here after redis' MIGRATE: %.200s, want %.200s", key, got, want[key])
		}
	}
	got := doStrings(t, redisConn, []string{"MIGRATE", oHost, oPort, keys[1], "0", "5000", "AUTH", "pw"})
	if !strings.Contains(got.Err, "BUSYKEY") {
		t.Fatalf("redis MIGRATE onto an existing key: %+v", got)
	}
	got = doStrings(t, redisConn, []string{"MIGRATE", oHost, oPort, keys[1], "0", "5000", "AUTH", "wrong"})
	if !strings.Contains(got.Err, "Target instance replied with error") {
		t.Fatalf("redis MIGRATE with a wrong password: %+v", got)
	}
	if n := mustDo(t, redisConn, "EXISTS", keys[1]).Int; n != 1 {
		t.Fatal("a failed MIGRATE deleted its key")
	}

	// Our errors: REPLACE over Redis' copy, a wrong password on Redis'
	// side, a closed port, KEYS with a key argument.
	mustDo(t, redisConn, "CONFIG", "SET", "requirepass", "rpw")
	mustDo(t, redisConn, "AUTH", "rpw")
	if got := mustDo(t, ours, "MIGRATE", rHost, rPort, keys[2], "0", "5000", "REPLACE", "AUTH2", "default", "rpw"); string(got.Str) != "OK" {
		t.Fatalf("MIGRATE REPLACE AUTH2: %+v", got)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"MIGRATE", rHost, rPort, keys[3], "0", "5000", "AUTH", "bad"}, "ERR Target instance replied with error: WRONGPASS"},
		{[]string{"MIGRATE", rHost, rPort, keys[3], "0", "5000", "AUTH", "rpw"}, "ERR Target instance replied with error: BUSYKEY"},
		{[]string{"MIGRATE", rHost, "1", keys[3], "0", "500"}, "IOERR error or timeout connecting to the client"},
		{[]string{"MIGRATE", rHost, rPort, keys[3], "0", "500", "KEYS", keys[3]}, "ERR When using MIGRATE KEYS option"},
		{[]string{"MIGRATE", rHost, rPort, keys[3], "0", "500", "AUTH"}, "ERR syntax error"},
		{[]string{"MIGRATE", rHost, rPort, keys[3], "x", "500"}, "ERR value is not an integer"},
	} {
		if got := doStrings(t, ours, tc.args); !strings.HasPrefix(got.Err, tc.want) {
			t.Errorf("%q: %+v, want %q", tc.args, got, tc.want)
		}
	}
	if n := mustDo(t, ours, "EXISTS", keys[3]).Int; n != 1 {
		t.Fatal("a refused MIGRATE deleted its key")
	}
}
