package server

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// TestDumpRestoreStreamRedis builds the same seeded random streams on
// redis-server and on this server (entries with the master's fields and
// others, integers of every listpack width, deletions and trims, consumer
// groups with pending entries, claimed ones, idle consumers, a stream
// emptied by XDEL), moves each with DUMP and RESTORE both ways, and
// checks that XINFO STREAM FULL of the restored key reads as the
// original's, delivery and seen times included. Redis deep-checks what
// this server sends (sanitize-dump-payload yes). For streams built by
// XADD and XGROUP CREATE alone, the two servers hold the same nodes, and
// their DUMPs must be the same bytes (Redis with rdbcompression off).
func TestDumpRestoreStreamRedis(t *testing.T) {
	sock := startRedis(t)
	s := startServer(t, nil)
	redisConn := testutil.Dial(t, "unix", sock)
	ours := testutil.Dial(t, "tcp", s.Addr().String())
	mustDo(t, redisConn, "CONFIG", "SET", "sanitize-dump-payload", "yes")
	mustDo(t, redisConn, "CONFIG", "SET", "rdbcompression", "no")
	sides := []struct {
		name     string
		from, to *testutil.Client
	}{{"redis->lsmgo", redisConn, ours}, {"lsmgo->redis", ours, redisConn}}
	seeds := 12
	if testing.Short() {
		seeds = 6
	}
	withPending, emptied := 0, 0
	for seed := range seeds {
		appendOnly := seed%3 == 0
		script := randomStreamScript(newRand(int64(seed)), "st", appendOnly)
		for _, c := range []*testutil.Client{redisConn, ours} {
			mustDo(t, c, "DEL", "st", "st2")
			for _, cmd := range script {
				doStrings(t, c, cmd) // an error (XCLAIM of an acked id) leaves the stream as it is
			}
		}
		if v := mustDo(t, ours, "XPENDING", "st", "g1"); v.Array[0].Int > 0 {
			withPending++
		}
		if mustDo(t, ours, "XLEN", "st").Int == 0 {
			emptied++
		}
		if appendOnly {
			want, got := dumpBytes(t, redisConn, "st"), dumpBytes(t, ours, "st")
			if !bytes.Equal(want, got) {
				t.Fatalf("seed %d: DUMP differs from Redis'\nredis %x\nlsmgo %x", seed, want, got)
			}
		}
		for _, side := range sides {
			payload := dumpBytes(t, side.from, "st")
			if got := side.to.Do(t, []byte("RESTORE"), []byte("st2"), []byte("0"), payload); got.Type != '+' {
				t.Fatalf("seed %d %s: RESTORE = %s (payload %x)", seed, side.name, got.Err, payload)
			}
			want, have := streamState(t, side.from, "st"), streamState(t, side.to, "st2")
			if want != have {
				at := 0
				for at < min(len(want), len(have)) && want[at] == have[at] {
					at++
				}
				from := max(0, at-200)
				t.Fatalf("seed %d %s: restored stream differs at byte %d\nsent …%.400s\ngot  …%.400s", seed, side.name, at, want[from:], have[from:])
			}
			mustDo(t, side.to, "DEL", "st2")
		}
	}
	if withPending == 0 || emptied == 0 {
		t.Fatalf("of %d streams, %d had pending entries and %d were emptied: the seeds no longer cover both", seeds, withPending, emptied)
	}
}

func dumpBytes(t *testing.T, c *testutil.Client, key string) []byte {
	t.Helper()
	v := doStrings(t, c, []string{"DUMP", key})
	if v.Type != '$' || v.Null {
		t.Fatalf("DUMP %s = %+v", key, v)
	}
	return bytes.Clone(v.Str)
}

// noisyFields are XINFO STREAM FULL's fields that a payload does not
// carry: Redis' node counts, and the active time Redis 7.0 does not
// keep.
var noisyFields = regexp.MustCompile(`"(radix-tree-keys|radix-tree-nodes|active-time)" -?[0-9]+ ?`)

// streamState renders XINFO STREAM FULL of key, all entries.
func streamState(t *testing.T, c *testutil.Client, key string) string {
	t.Helper()
	var b strings.Builder
	renderValue(&b, mustDo(t, c, "XINFO", "STREAM", key, "FULL", "COUNT", "0"))
	return noisyFields.ReplaceAllString(b.String(), "")
}

func renderValue(b *strings.Builder, v resp.Value) {
	switch v.Type {
	case '*', '%', '~':
		b.WriteByte('[')
		for i, e := range v.Array {
			if i > 0 {
				b.WriteByte(' ')
			}
			renderValue(b, e)
		}
		b.WriteByte(']')
	case ':':
		b.WriteString(strconv.FormatInt(v.Int, 10))
	default:
		b.WriteString(strconv.Quote(string(v.Str)))
	}
}

// randomStreamScript returns the commands that build a random stream at
// key with explicit ids. Values are short enough that Redis' nodes fill
// by entry count (100), never by stream-node-max-bytes, as this server's
// do.
func randomStreamScript(rng interface{ IntN(int) int }, key string, appendOnly bool) [][]string {
	value := func() string {
		switch rng.IntN(8) {
		case 0:
			return strconv.Itoa(rng.IntN(256) - 128)
		case 1:
			return strconv.Itoa(rng.IntN(1<<24) - 1<<23)
		case 2:
			return strconv.FormatInt(int64(rng.IntN(1<<30))<<20, 10)
		case 3:
			return ""
		case 4:
			return []string{"007", "-0", "+1", "x y"}[rng.IntN(4)]
		}
		return "v" + strconv.Itoa(rng.IntN(1000))
	}
	var cmds [][]string
	var ids []string
	ms := uint64(rng.IntN(3))
	n := 1 + rng.IntN(260)
	for range n {
		ms += uint64(rng.IntN(3))
		id := fmt.Sprintf("%d-%d", ms, len(ids)%3+rng.IntN(2))
		if len(ids) > 0 && id <= ids[len(ids)-1] && strings.HasPrefix(id, fmt.Sprint(ms, "-")) {
			ms++
			id = fmt.Sprintf("%d-%d", ms, rng.IntN(3))
		}
		ids = append(ids, id)
		cmd := []string{"XADD", key, id}
		switch rng.IntN(6) {
		case 0:
			cmd = append(cmd, "other", value())
		case 1:
			cmd = append(cmd, "b", value(), "a", value())
		case 2:
			cmd = append(cmd, "a", value(), "b", value(), "12", value())
		default:
			cmd = append(cmd, "a", value(), "b", value())
		}
		cmds = append(cmds, cmd)
	}
	cmds = append(cmds, []string{"XGROUP", "CREATE", key, "g1", "0"}, []string{"XGROUP", "CREATE", key, "g2", "$"})
	if appendOnly {
		return cmds
	}
	pick := func() string { return ids[rng.IntN(len(ids))] }
	for range rng.IntN(6) {
		cmds = append(cmds, []string{"XREADGROUP", "GROUP", "g1", "c" + strconv.Itoa(rng.IntN(3)), "COUNT", strconv.Itoa(1 + rng.IntN(40)), "STREAMS", key, ">"})
	}
	for range rng.IntN(10) {
		cmds = append(cmds, []string{"XACK", key, "g1", pick()})
	}
	cmds = append(cmds,
		[]string{"XCLAIM", key, "g1", "thief", "0", pick(), pick(), "RETRYCOUNT", "7"},
		[]string{"XGROUP", "CREATECONSUMER", key, "g1", "idle"},
		[]string{"XGROUP", "SETID", key, "g2", pick(), "ENTRIESREAD", strconv.Itoa(rng.IntN(300))},
		[]string{"XREADGROUP", "GROUP", "g2", "n", "NOACK", "COUNT", "3", "STREAMS", key, ">"},
	)
	switch rng.IntN(4) {
	case 0:
		cmds = append(cmds, append([]string{"XDEL", key}, ids...)) // empty, with groups
	case 1:
		cmds = append(cmds, []string{"XTRIM", key, "MAXLEN", "~", strconv.Itoa(rng.IntN(200))})
	case 2:
		cmds = append(cmds, []string{"XTRIM", key, "MINID", "=", pick()})
	}
	for range rng.IntN(20) {
		cmds = append(cmds, []string{"XDEL", key, pick()})
	}
	return cmds
}
