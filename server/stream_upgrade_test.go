package server

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/internal/rdb"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// The fixture testdata/stream-v1 is a data directory written by lsmgo at
// 1c20104, the last with 96-byte stream metadata, and the commands that
// wrote it (fixture.json). Building that binary in every test run would
// need the old tree and a minute of the shared CPUs, so the directory is
// committed (a few hundred KB), made by
//
//	git worktree add /tmp/old-lsmgo 1c20104
//	(cd /tmp/old-lsmgo && go build -o /tmp/lsmgo-old ./server/cmd/lsmgo)
//	go test -run '^TestStreamV1Fixture$' ./server -stream-v1.old /tmp/lsmgo-old
//
// which also checks every reply of the old binary against redis-server.
// TestRedisDiffStreamUpgrade replays the commands into redis-server, so
// the expected replies come from a live one, as in the other
// differential tests.
var streamV1Old = flag.String("stream-v1.old", "", "lsmgo binary of the 96-byte stream layout: rewrite testdata/stream-v1 with it")

const streamV1Dir = "testdata/stream-v1"

// streamV1Fixture is fixture.json: the commands that built the fixture's
// streams, in order, and where streamTrimGen's ids had got to.
type streamV1Fixture struct {
	Next0    int
	Commands [][]string
}

// streamV1Keys are the fixture's streams: streamTrimGen's, and big, a
// stream of many nodes of which XDEL emptied some (its tail included).
var streamV1Keys = []string{"t0", "t1", "t2", "big"}

// streamV1Big returns the commands that build big: 599 entries in nodes
// of 3, whole nodes and single entries deleted, the tail node (of 2)
// emptied and one entry of the node before deleted, the head trimmed.
func streamV1Big() [][]string {
	var cmds [][]string
	for i := 1; i <= 599; i++ {
		cmds = append(cmds, []string{"XADD", "big", strconv.Itoa(i) + "-1", "f", strconv.Itoa(i)})
	}
	del := []string{"XDEL", "big"}
	for _, i := range []int{7, 8, 9, 100, 200, 201, 202, 203, 204, 205, 350, 597, 598, 599} {
		del = append(del, strconv.Itoa(i)+"-1")
	}
	return append(cmds, del, []string{"XTRIM", "big", "MAXLEN", "570"},
		[]string{"XGROUP", "CREATE", "big", "g", "0"},
		[]string{"XREADGROUP", "GROUP", "g", "c0", "COUNT", "20", "STREAMS", "big", ">"})
}

// TestStreamV1Fixture rewrites testdata/stream-v1 with the binary
// -stream-v1.old names, comparing its every reply with redis-server's.
func TestStreamV1Fixture(t *testing.T) {
	if *streamV1Old == "" {
		t.Skip("-stream-v1.old not given")
	}
	redisSock := startRedis(t)
	for seed := uint64(21); seed < 40; seed++ {
		dir, fx := streamV1Generate(t, redisSock, seed)
		redis := dialDiff(t, "unix", redisSock, 2)
		// Keep a fixture only when the old binary put every live entry
		// in the node Redis did (it did not always: it had no XDEL
		// fallback of the tail, for one), so that what follows is the
		// upgrade's doing.
		if !streamV1NodesMatch(t, dir, redis, t.Log) {
			t.Logf("seed %d: the old binary's nodes differ from Redis'", seed)
			continue
		}
		if err := os.RemoveAll(streamV1Dir); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(filepath.Join(streamV1Dir, "db"), os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		js, err := json.Marshal(fx)
		if err != nil {
			t.Fatal(err)
		}
		js = []byte(strings.ReplaceAll(string(js), `],[`, "],\n["))
		if err := os.WriteFile(filepath.Join(streamV1Dir, "fixture.json"), append(js, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: fixture written", seed)
		return
	}
	t.Fatal("no seed gave a fixture")
}

// streamV1Generate runs the fixture's commands, generated from seed, on
// the old binary (in a new directory, returned) and on redis-server,
// comparing every reply, and stops the old binary cleanly.
func streamV1Generate(t *testing.T, redisSock string, seed uint64) (string, streamV1Fixture) {
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(*streamV1Old, "serve", "-dir", dir, "-addr", addr, "-http", "", "-appendfsync", "always")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for i := 0; ; i++ {
		if nc, err := net.Dial("tcp", addr); err == nil {
			nc.Close()
			break
		} else if i == 100 {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	old := dialDiff(t, "tcp", addr, 2)
	redis := dialDiff(t, "unix", redisSock, 2)
	fx := streamV1Fixture{Commands: [][]string{{"CONFIG", "SET", "stream-node-max-entries", "3"}}}
	for _, d := range []*diffConn{old, redis} {
		d.do(t, "FLUSHALL")
		d.do(t, fx.Commands[0]...)
	}
	big := streamV1Big()
	for i := 0; i < len(big); i += 64 {
		diffRound(t, i, big[i:min(i+64, len(big))], old, redis)
	}
	fx.Commands = append(fx.Commands, big...)
	st := &streamTrimGen{}
	g := &diffGen{rng: rand.New(rand.NewPCG(seed, 0x5e1)), proto: 2, only: func(g *diffGen) diffCmd {
		// Without XDEL, which the old binary did not follow Redis in when
		// it emptied the tail node (big has XDELs).
		c := st.next(g)
		for c.args[0] == "XDEL" {
			c = st.next(g)
		}
		fx.Commands = append(fx.Commands, c.args)
		return c
	}}
	runDiffWith(t, g, seed, 2500, old, redis, nil)
	fx.Next0 = st.next0
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("old lsmgo: %v", err)
	}
	return dir, fx
}

// streamV1NodesMatch opens a copy of the data directory dir and reports
// whether each of its streams (in the old layout) has its live entries
// in the nodes redis-server has them in, and its tail node as full.
// With t.Error as report, it says how they differ.
func streamV1NodesMatch(t *testing.T, dir string, redis *diffConn, report func(args ...any)) bool {
	t.Helper()
	cp := t.TempDir()
	if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(c *Config) { c.Dir = cp })
	defer s.Shutdown(context.Background())
	kb := &keyBuf{ns: s.ks.dbs.Load().ns[0]}
	ok := true
	for _, k := range streamV1Keys {
		var ours, theirs []string
		tailLive := false // the old tail node holds live entries: its fill is Redis'
		m, exists, err := s.ks.getStream(s.ks.latest(), kb, []byte(k))
		if err != nil {
			t.Fatal(err)
		}
		if exists {
			var node uint64
			err = s.ks.streamScan(s.ks.latest(), []byte(k), &m, streamID{}, maxStreamID, false, func(e streamEntry) bool {
				if len(ours) == 0 || e.node != node {
					ours = append(ours, "|")
				}
				node = e.node
				ours = append(ours, e.id.String())
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			if tailLive = node == m.tailNode && m.length > 0; tailLive {
				ours = append(ours, "fill "+strconv.FormatUint(m.tail.fill, 10))
			}
		}
		redis.send([]string{"DUMP", k})
		v, err := redis.flushRead(1)
		if err != nil {
			t.Fatal(err)
		}
		if p := v[0].Str; len(p) > 11 {
			r := rdb.NewReader(p[1:len(p)-10], int64(len(p)))
			n, err := r.Len()
			var lastLive bool
			var fill int
			for ; err == nil && n > 0; n-- {
				var key, lp []byte
				var node rdb.StreamNode
				if key, err = r.String(); err == nil {
					if lp, err = r.String(); err == nil {
						node, err = rdb.DecodeStreamNode(key, lp)
					}
				}
				sep := true
				lastLive = false
				for _, e := range node.Entries {
					if !e.Deleted {
						if sep {
							theirs = append(theirs, "|")
							sep = false
						}
						lastLive = true
						theirs = append(theirs, streamID{e.ID.Ms, e.ID.Seq}.String())
					}
				}
				fill = len(node.Entries)
			}
			if err != nil {
				t.Fatal(err)
			}
			if lastLive && tailLive {
				theirs = append(theirs, "fill "+strconv.Itoa(fill))
			}
		}
		if g, w := strings.Join(ours, " "), strings.Join(theirs, " "); g != w {
			ok = false
			if report != nil {
				report(fmt.Sprintf("stream %s's nodes:\n lsmgo: %s\n redis: %s", k, g, w))
			}
		}
	}
	return ok
}

// TestRedisDiffStreamUpgrade opens the fixture's streams, written in the
// 96-byte layout, and compares them with redis-server fed the commands
// that wrote them: first every read (XRANGE, XLEN, XINFO, XPENDING, a
// DUMP restored into redis-server, COPY) and a whole-DB compaction
// (whose filter judges elements by the old metadata), then trims of the
// big stream, then streamTrimGen's random mix, whose first write to each
// stream upgrades it, with compactions between rounds.
func TestRedisDiffStreamUpgrade(t *testing.T) {
	js, err := os.ReadFile(filepath.Join(streamV1Dir, "fixture.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx streamV1Fixture
	if err := json.Unmarshal(js, &fx); err != nil {
		t.Fatal(err)
	}
	redisSock := startRedis(t)
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(streamV1Dir, "db"))); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(c *Config) { c.Dir = dir })
	ours := dialDiff(t, "tcp", s.Addr().String(), 2)
	theirs := dialDiff(t, "unix", redisSock, 2)
	theirs.do(t, "FLUSHALL")
	for i := 0; i < len(fx.Commands); i += 256 {
		cmds := fx.Commands[i:min(i+256, len(fx.Commands))]
		for _, c := range cmds {
			theirs.send(c)
		}
		if _, err := theirs.flushRead(len(cmds)); err != nil {
			t.Fatal(err)
		}
	}
	ours.do(t, fx.Commands[0]...) // stream-node-max-entries: a setting, not data
	if !streamV1NodesMatch(t, filepath.Join(streamV1Dir, "db"), theirs, t.Error) {
		t.Fatal("the fixture does not hold Redis' nodes")
	}

	// reads compares what a stream's reads show; times (idle, delivery)
	// differ between the servers, and XINFO STREAM's radix-tree counts
	// are Redis' internals.
	reads := func(round int) {
		t.Helper()
		for _, k := range streamV1Keys {
			for _, q := range []struct {
				args string
				norm func(resp.Value) resp.Value
			}{
				{"XRANGE %s - +", nil}, {"XREVRANGE %s + - COUNT 3", nil}, {"XLEN %s", nil}, {"TYPE %s", nil},
				{"XINFO GROUPS %s", nil}, {"XPENDING %s g", nil}, {"XINFO STREAM %s", dropRadix},
				{"XPENDING %s g - + 1000", dropIdle},
			} {
				args := strings.Fields(fmt.Sprintf(q.args, k))
				got, want := diffOne(t, ours, theirs, args, q.norm)
				if got != want {
					t.Fatalf("round %d, %q:\n lsmgo: %s\n redis: %s", round, args, got, want)
				}
			}
		}
	}
	reads(0)
	// A DUMP of the old layout restores into redis-server as the stream
	// redis-server has.
	for _, k := range streamV1Keys {
		ours.send([]string{"DUMP", k})
		dump, err := ours.flushRead(1)
		if err != nil {
			t.Fatal(err)
		}
		theirs.do(t, "RESTORE", k+":r", "0", string(dump[0].Str), "REPLACE")
		for _, q := range []string{"XRANGE %s - +", "XINFO GROUPS %s", "XPENDING %s g", "XINFO STREAM %s"} {
			restored, _ := diffOne(t, theirs, theirs, strings.Fields(fmt.Sprintf(q, k+":r")), dropRadix)
			_, want := diffOne(t, theirs, theirs, strings.Fields(fmt.Sprintf(q, k)), dropRadix)
			if restored = strings.ReplaceAll(restored, k+":r", k); restored != want { // NOGROUP names the key
				t.Fatalf("%s of the restored DUMP of %s:\n restored: %s\n redis:    %s", q, k, restored, want)
			}
		}
		theirs.do(t, "DEL", k+":r")
	}
	if err := s.DB().Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	reads(1)
	var cmds [][]string
	for _, c := range []string{"COPY big bigc", "XRANGE bigc - +", "DEL bigc",
		"XTRIM big MAXLEN ~ 500", "XTRIM big MINID ~ 150-1", "XADD big MAXLEN ~ 400 1000-1 f x", "XTRIM big MINID 300-1",
		"XDEL big 300-1 301-1 302-1", "XTRIM big MAXLEN ~ 300 LIMIT 10", "XRANGE big - +", "XADD big 1001-1 f y",
		"XTRIM big MAXLEN ~ 1", "XRANGE big - +", "XLEN big"} {
		cmds = append(cmds, strings.Fields(c))
	}
	diffRound(t, 2, cmds, ours, theirs)
	reads(3)
	st := &streamTrimGen{next0: fx.Next0}
	g := &diffGen{rng: rand.New(rand.NewPCG(22, 0x5e1)), proto: 2, only: st.next}
	runDiffWith(t, g, 22, 4000, ours, theirs, func(round int) {
		if round%16 == 15 {
			if err := s.DB().Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	})
	reads(4)
}

// diffOne sends args to both servers and renders their replies after
// norm (when not nil).
func diffOne(t *testing.T, ours, theirs *diffConn, args []string, norm func(resp.Value) resp.Value) (got, want string) {
	t.Helper()
	var out [2]string
	for i, d := range []*diffConn{ours, theirs} {
		d.send(args)
		v, err := d.flushRead(1)
		if err != nil {
			t.Fatal(err)
		}
		if norm != nil {
			v[0] = norm(v[0])
		}
		out[i] = render(v[0], exact)
	}
	return out[0], out[1]
}

// dropRadix drops the radix-tree-keys and radix-tree-nodes fields of an
// XINFO STREAM reply (RESP2: name, value, …).
func dropRadix(v resp.Value) resp.Value {
	if v.Type != '*' || len(v.Array)%2 != 0 {
		return v
	}
	var kept []resp.Value
	for i := 0; i < len(v.Array); i += 2 {
		if !strings.HasPrefix(string(v.Array[i].Str), "radix-tree-") {
			kept = append(kept, v.Array[i], v.Array[i+1])
		}
	}
	v.Array = kept
	return v
}

// dropIdle zeroes the idle times of an extended XPENDING reply: [id,
// consumer, idle, deliveries] each.
func dropIdle(v resp.Value) resp.Value {
	for i, e := range v.Array {
		if len(e.Array) == 4 {
			v.Array[i].Array[2].Int = 0
		}
	}
	return v
}
