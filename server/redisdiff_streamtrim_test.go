package server

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestRedisDiffStreamTrim compares trimming with redis-server where it
// matters most: streams of many small nodes (stream-node-max-entries 1
// to 5 on both servers), grown by rising ids and trimmed by length and
// id, exact and "~", with LIMIT, among XDELs (which change the nodes'
// live counts), consumer groups whose pending entries outlive their
// trimmed entries, XSETID lowering the last id of an emptied stream
// (whose dead entries must not come back), and COPY. Every few rounds
// lsmgo's DB is compacted whole, so the compaction filter drops what
// trimming left dead while the comparison goes on.
func TestRedisDiffStreamTrim(t *testing.T) {
	perSeed := 16_000
	if testing.Short() {
		perSeed = 4_000
	}
	redisSock := startRedis(t)
	s := startServer(t, nil)
	total := 0
	for seed, nodeMax := range []int{1, 2, 3, 4, 5, 7, 100} {
		proto := 2 + seed%2
		t.Run(fmt.Sprintf("seed=%d/node=%d", seed, nodeMax), func(t *testing.T) {
			ours := dialDiff(t, "tcp", s.Addr().String(), proto)
			theirs := dialDiff(t, "unix", redisSock, proto)
			for _, d := range []*diffConn{ours, theirs} {
				d.do(t, "FLUSHALL")
				d.do(t, "CONFIG", "SET", "stream-node-max-entries", strconv.Itoa(nodeMax))
			}
			st := &streamTrimGen{}
			g := &diffGen{rng: rand.New(rand.NewPCG(uint64(seed), 0x7e1d)), proto: proto, only: st.next}
			total += runDiffWith(t, g, uint64(seed), perSeed, ours, theirs, func(round int) {
				if round%16 == 15 {
					if err := s.DB().Compact(nil, nil); err != nil {
						t.Fatal(err)
					}
				}
			})
		})
	}
	t.Logf("%d commands compared; the compaction filter dropped %d entries", total, s.DB().Metrics().Compaction.Filtered)
}

// streamTrimGen generates TestRedisDiffStreamTrim's commands over two
// streams (and a copy), with ids that mostly rise so streams span many
// nodes.
type streamTrimGen struct{ next0 int }

func (st *streamTrimGen) id(back int) string {
	return strconv.Itoa(max(st.next0-back, 0)) + "-" + strconv.Itoa(back%3)
}

// trimArgs returns MAXLEN or MINID, "=" or "~" or nothing, a threshold,
// and now and then (with "~") a LIMIT.
func (st *streamTrimGen) trimArgs(g *diffGen) []string {
	var args []string
	mode := trimMode(g)
	if g.rng.IntN(2) == 0 {
		args = append(append([]string{"MAXLEN"}, mode...), g.pick("0", "1", "3", "8", "20", "40"))
	} else {
		args = append(append([]string{"MINID"}, mode...), st.id(g.rng.IntN(60)))
	}
	if len(mode) == 1 && mode[0] == "~" && g.rng.IntN(2) == 0 {
		args = append(args, "LIMIT", g.pick("0", "1", "3", "10"))
	}
	return args
}

func (st *streamTrimGen) next(g *diffGen) diffCmd {
	key := g.pick("t0", "t1")
	grp, consumer := "g", g.pick("c0", "c1")
	switch g.rng.IntN(40) {
	case 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13:
		st.next0++
		args := []string{"XADD", key}
		if g.rng.IntN(3) == 0 {
			args = append(args, st.trimArgs(g)...)
		}
		id := st.id(0)
		if g.rng.IntN(4) == 0 {
			// Refused unless an XSETID lowered the last id of an
			// emptied stream: then it reuses a trimmed entry's id.
			id = st.id(1 + g.rng.IntN(40))
		}
		return diffCmdOf(exact, append(args, id, "f", strconv.Itoa(st.next0))...)
	case 14, 15, 16:
		return diffCmdOf(exact, append([]string{"XTRIM", key}, st.trimArgs(g)...)...)
	case 17, 18, 19:
		args := []string{"XDEL", key}
		for range 1 + g.rng.IntN(3) {
			args = append(args, st.id(g.rng.IntN(50)))
		}
		return diffCmdOf(exact, args...)
	case 20, 21:
		return diffCmdOf(exact, "XRANGE", g.pick(key, "t2"), "-", "+")
	case 22:
		return diffCmdOf(exact, "XREVRANGE", key, "+", st.id(g.rng.IntN(60)), "COUNT", g.pick("1", "5"))
	case 23:
		return diffCmdOf(exact, "XLEN", g.pick(key, "t2"))
	case 24:
		// Errors unless the stream is empty or the id is not below its
		// top entry; on an emptied stream it lowers the last id, and
		// the next XADDs reuse the ids of trimmed entries.
		return diffCmdOf(exact, "XSETID", key, st.id(g.rng.IntN(80)))
	case 25:
		return diffCmdOf(exact, "XGROUP", "CREATE", key, grp, g.pick("0", "$"), "MKSTREAM")
	case 26, 27:
		return diffCmdOf(exact, "XREADGROUP", "GROUP", grp, consumer, "COUNT", g.pick("1", "5"), "STREAMS", key, ">")
	case 28:
		// History: pending ids whose entries were trimmed come back
		// with a nil body.
		return diffCmdOf(exact, "XREADGROUP", "GROUP", grp, consumer, "STREAMS", key, "0")
	case 29:
		return diffCmdOf(exact, "XACK", key, grp, st.id(g.rng.IntN(60)), st.id(g.rng.IntN(60)))
	case 30:
		return diffCmdOf(exact, "XPENDING", key, grp)
	case 31:
		return diffCmdOf(exact, "XCLAIM", key, grp, consumer, "0", st.id(g.rng.IntN(60)), st.id(g.rng.IntN(60)), "JUSTID")
	case 32:
		return diffCmdOf(exact, "XAUTOCLAIM", key, grp, consumer, "0", "0", "COUNT", "3", "JUSTID")
	case 33:
		return diffCmdOf(exact, "XINFO", "GROUPS", key)
	case 34:
		return diffCmdOf(exact, "COPY", key, "t2", "REPLACE")
	case 35:
		return diffCmdOf(shape, "XINFO", "STREAM", g.pick(key, "t2"))
	case 36:
		return diffCmdOf(exact, "DEL", g.pick(key, "t2"))
	}
	return diffCmdOf(exact, "XRANGE", key, st.id(g.rng.IntN(60)), "+", "COUNT", "3")
}
