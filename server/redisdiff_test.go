package server

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// TestRedisDiff sends the same seeded random command sequences to the
// server and to a real redis-server (Debian's package, which CI installs)
// and requires every reply to match: same RESP types, same bytes. Keys,
// fields and values come from small pools, so that types collide
// (WRONGTYPE), fields repeat and collections empty out. Where Redis'
// answer depends on its hash table order or on chance, the reply is
// normalized first (see norm); doc/server.md lists those differences.
func TestRedisDiff(t *testing.T) {
	const seeds = 4
	// 240,000 commands in all, half in each protocol, -short included:
	// CI runs them all (about 25 s under -race on 2 cores).
	const perSeed = 60_000
	redisSock := startRedis(t)
	s := startServer(t, nil)
	total := 0
	for seed := range uint64(seeds) {
		proto := 2 + int(seed%2)
		t.Run(fmt.Sprintf("seed=%d/resp%d", seed, proto), func(t *testing.T) {
			ours := dialDiff(t, "tcp", s.Addr().String(), proto)
			theirs := dialDiff(t, "unix", redisSock, proto)
			for _, d := range []*diffConn{ours, theirs} {
				d.do(t, "FLUSHALL")
			}
			total += runDiff(t, seed, proto, perSeed, ours, theirs)
		})
	}
	t.Logf("%d commands compared", total)
}

// startRedis starts redis-server on a unix socket (testutil.StartRedis).
func startRedis(t *testing.T) string { return testutil.StartRedis(t) }

// diffConn is a raw RESP connection to one of the two servers.
type diffConn struct {
	nc  net.Conn
	rd  *resp.Reader
	out []byte
}

func dialDiff(t *testing.T, network, addr string, proto int) *diffConn {
	t.Helper()
	nc, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	d := &diffConn{nc: nc, rd: resp.NewReader(nc, resp.Limits{})}
	if proto == 3 {
		d.do(t, "HELLO", "3")
	}
	return d
}

// do runs one command whose reply is not compared.
func (d *diffConn) do(t *testing.T, args ...string) {
	t.Helper()
	d.send(args)
	if _, err := d.flushRead(1); err != nil {
		t.Fatal(err)
	}
}

func (d *diffConn) send(args []string) {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	d.out = resp.AppendCommand(d.out, bs...)
}

// flushRead sends the queued commands and returns their n replies.
func (d *diffConn) flushRead(n int) ([]resp.Value, error) {
	d.nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := d.nc.Write(d.out); err != nil {
		return nil, err
	}
	d.out = d.out[:0]
	replies := make([]resp.Value, n)
	for i := range replies {
		v, err := d.rd.ReadValue()
		if err != nil {
			return nil, err
		}
		replies[i] = testutil.CloneValue(v)
	}
	return replies, nil
}

// norm says how a reply is compared.
type norm uint8

const (
	exact norm = iota
	// unordered sorts an aggregate's elements: Redis lists a hash's
	// fields in its hash table's order, lsmgo in byte order.
	unordered
	// unorderedPairs sorts an aggregate's (field, value) pairs.
	unorderedPairs
	// scanAll applies unorderedPairs to a scan reply's elements, and
	// scanKeys unordered; the generator asks for a COUNT that covers
	// the whole collection or keyspace.
	scanAll
	scanKeys
	// shape compares only types and lengths: a random pick.
	shape
	// sign compares an integer's sign only: a TTL counted from the
	// moment each server ran the EXPIRE.
	sign
)

// render prints v canonically under n, with its RESP type bytes, so that
// two renders are equal exactly when the replies' bytes are (after n).
func render(v resp.Value, n norm) string {
	var b strings.Builder
	writeValue(&b, v, n)
	return b.String()
}

func writeValue(b *strings.Builder, v resp.Value, n norm) {
	b.WriteByte(v.Type)
	switch {
	case v.Null:
		b.WriteString("null")
	case v.Type == '-' || v.Type == '!':
		b.WriteString(v.Err)
	case v.Type == ':' && n == sign:
		b.WriteString(strconv.FormatInt(int64(cmp.Compare(v.Int, 0)), 10))
	case v.Type == ':' || v.Type == '#':
		b.WriteString(strconv.FormatInt(v.Int, 10))
	case v.Type == ',':
		b.WriteString(strconv.FormatFloat(v.Float, 'g', -1, 64))
	case v.Array != nil || v.Type == '*' || v.Type == '%' || v.Type == '~':
		if n == shape {
			fmt.Fprintf(b, "[%d]", len(v.Array))
			return
		}
		if (n == scanAll || n == scanKeys) && len(v.Array) == 2 {
			b.WriteByte('[')
			writeValue(b, v.Array[0], exact)
			if n == scanAll {
				writeValue(b, v.Array[1], unorderedPairs)
			} else {
				writeValue(b, v.Array[1], unordered)
			}
			b.WriteByte(']')
			return
		}
		step := 1
		if n == unorderedPairs {
			step = 2
		}
		var parts []string
		for i := 0; i+step <= len(v.Array); i += step {
			var p strings.Builder
			for _, e := range v.Array[i : i+step] {
				writeValue(&p, e, exact)
			}
			parts = append(parts, p.String())
		}
		if n == unordered || n == unorderedPairs {
			slices.Sort(parts)
		}
		fmt.Fprintf(b, "[%d:%s]", len(v.Array), strings.Join(parts, ","))
	default:
		if n == shape {
			return
		}
		fmt.Fprintf(b, "%q", v.Str)
	}
}

// diffCmd is one generated command and how to compare its reply.
type diffCmd struct {
	args []string
	norm norm
	// elems, when set, compares an array reply element by element, each
	// under its own norm: EXEC's reply holds the replies of commands
	// that each have theirs.
	elems []norm
}

// renderReply renders v, the reply to cmd, under cmd's norms.
func renderReply(v resp.Value, cmd diffCmd) string {
	if cmd.elems == nil || len(v.Array) != len(cmd.elems) {
		return render(v, cmd.norm)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%c[%d:", v.Type, len(v.Array))
	for i, e := range v.Array {
		writeValue(&b, e, cmd.elems[i])
		b.WriteByte(',')
	}
	return b.String()
}

// runDiff sends perSeed commands generated from seed to both servers in
// pipelined rounds and fails at the first differing reply; it returns the
// number of commands compared.
func runDiff(t *testing.T, seed uint64, proto, perSeed int, ours, theirs *diffConn) int {
	return runDiffWith(t, &diffGen{rng: rand.New(rand.NewPCG(seed, 0x1a2b3c)), proto: proto}, seed, perSeed, ours, theirs, nil)
}

// runDiffWith is runDiff with the generator g, calling between (when not
// nil) after each round of commands.
func runDiffWith(t *testing.T, g *diffGen, seed uint64, perSeed int, ours, theirs *diffConn, between func(round int)) int {
	const round = 64
	var history []diffCmd
	for done := 0; done < perSeed; done += round {
		cmds := make([]diffCmd, round)
		for i := range cmds {
			cmds[i] = g.next()
			ours.send(cmds[i].args)
			theirs.send(cmds[i].args)
		}
		got, err := ours.flushRead(round)
		if err != nil {
			t.Fatalf("lsmgo: %v", err)
		}
		want, err := theirs.flushRead(round)
		if err != nil {
			t.Fatalf("redis: %v", err)
		}
		for i, cmd := range cmds {
			history = append(history, cmd)
			if g, w := renderReply(got[i], cmd), renderReply(want[i], cmd); g != w {
				// The commands that touched the failing command's keys.
				var recent strings.Builder
				for _, h := range history[max(0, len(history)-1000):] {
					if len(h.args) < 2 || slices.Contains(cmd.args[1:], h.args[1]) || slices.Contains([]string{"FLUSHALL", "FLUSHDB", "SELECT", "SWAPDB"}, h.args[0]) ||
						len(h.args) > 2 && slices.Contains(cmd.args[1:], h.args[2]) {
						fmt.Fprintf(&recent, "  %q\n", h.args)
					}
				}
				t.Fatalf("seed %d, command %d %q:\n lsmgo: %s\n redis: %s\nearlier commands on its keys:\n%s", seed, done+i, cmd.args, g, w, recent.String())
			}
		}
		if len(history) > 10_000 {
			history = slices.Clone(history[len(history)-1000:])
		}
		if between != nil {
			between(done / round)
		}
	}
	return perSeed
}

// diffGen generates commands over small pools of keys, fields and values.
type diffGen struct {
	rng   *rand.Rand
	proto int
	// pending holds the rest of a sequence a group generated (such as
	// MULTI, commands, EXEC): next returns them before anything new.
	pending []diffCmd
	// only, when set, generates every command instead of the groups.
	only func(g *diffGen) diffCmd
}

func (g *diffGen) pick(pool ...string) string { return pool[g.rng.IntN(len(pool))] }

func (g *diffGen) key() string   { return "k" + strconv.Itoa(g.rng.IntN(8)) }
func (g *diffGen) field() string { return "f" + strconv.Itoa(g.rng.IntN(6)) }

// value is usually a small integer, so that the INCR family finds
// numbers, or a multiple of a quarter; the floats group (diffFloats)
// covers floats of every magnitude and diffEdges the extremes.
func (g *diffGen) value() string {
	switch g.rng.IntN(6) {
	case 0:
		return g.pick("", "abc", "hello world", "x\r\ny", "-", " 1", "1e3", "inf", "01", "+5")
	case 1:
		return strconv.FormatFloat(float64(g.rng.IntN(200)-100)/4, 'f', -1, 64)
	}
	return strconv.Itoa(g.rng.IntN(100) - 50)
}

// member is a set member: names, and integers, which Redis keeps in its
// intset encoding while a set holds nothing else.
func (g *diffGen) member() string {
	return g.pick("m0", "m1", "m2", "m3", "1", "2", "10", "-3")
}

func (g *diffGen) count() string {
	return g.pick("0", "1", "-1", "2", "-3", "5", "100", "-100", "x")
}

// diffGroup generates the commands of one group; weight is its share of
// the commands generated. Each type's test file adds its group in an init,
// so that a new type adds a file rather than cases to one switch.
type diffGroup struct {
	name   string
	weight int
	gen    func(*diffGen) diffCmd
}

var diffGroups []diffGroup

func init() {
	diffGroups = append(diffGroups,
		diffGroup{"strings", 10, diffStrings},
		diffGroup{"keys", 7, diffKeys})
}

func diffCmdOf(n norm, args ...string) diffCmd { return diffCmd{args: args, norm: n} }

// next returns the next command of a pending sequence, if any, or picks a
// group by weight and lets it generate a command (or start a sequence).
func (g *diffGen) next() diffCmd {
	if len(g.pending) > 0 {
		cmd := g.pending[0]
		g.pending = g.pending[1:]
		return cmd
	}
	if g.only != nil {
		return g.only(g)
	}
	return g.fromGroups("")
}

// fromGroups is next without the pending queue, and without the group
// named skip: a group that wraps other groups' commands (MULTI … EXEC)
// asks for them so.
func (g *diffGen) fromGroups(skip string) diffCmd {
	total := 0
	for _, gr := range diffGroups {
		if gr.name != skip {
			total += gr.weight
		}
	}
	n := g.rng.IntN(total)
	for _, gr := range diffGroups {
		if gr.name == skip {
			continue
		}
		if n < gr.weight {
			return gr.gen(g)
		}
		n -= gr.weight
	}
	panic("unreachable")
}

// diffStrings generates the string commands.
func diffStrings(g *diffGen) diffCmd {
	k, v := g.key(), g.value()
	switch g.rng.IntN(10) {
	case 0, 1:
		return diffCmdOf(exact, "SET", k, v)
	case 2:
		return diffCmdOf(exact, "GET", k)
	case 3:
		args := []string{"SET", k, v, g.pick("NX", "XX", "GET", "KEEPTTL", "PX")}
		if g.rng.IntN(3) == 0 {
			args = append(args, g.pick("GET", "XX", "100000"))
		}
		return diffCmdOf(exact, args...)
	case 4:
		return diffCmdOf(exact, "INCRBY", k, g.value())
	case 5:
		// Appending digits to a float would make one that is not exact
		// in binary.
		return diffCmdOf(exact, "APPEND", k, g.pick("", "abc", "!"))
	case 6:
		return diffCmdOf(exact, "MGET", k, g.key(), g.key())
	case 7:
		return diffCmdOf(exact, g.pick("STRLEN", "GETDEL", "INCR", "DECR"), k)
	case 8:
		return diffCmdOf(exact, g.pick("SETNX", "GETSET"), k, v)
	default:
		return diffCmdOf(exact, "INCRBYFLOAT", k, g.value())
	}
}

// diffKeys generates the commands on keys of any type, and now and then
// a FLUSHALL.
func diffKeys(g *diffGen) diffCmd {
	k := g.key()
	switch g.rng.IntN(7) {
	case 0:
		return diffCmdOf(exact, "DEL", k, g.key())
	case 1:
		return diffCmdOf(exact, "EXISTS", k, g.key(), k)
	case 2:
		return diffCmdOf(exact, "TYPE", k)
	case 3:
		// Relative times: the two servers compute "now" a few
		// milliseconds apart, so GT and LT, which compare the new time
		// with the old, get absolute times only.
		args := []string{"EXPIRE", k, g.pick("1000", "-1", "0", "x", "5000")}
		if g.rng.IntN(2) == 0 {
			args = append(args, g.pick("NX", "XX", "YY"))
		}
		if g.rng.IntN(2) == 0 {
			args = []string{"EXPIREAT", k, g.pick("4000000000", "4100000000", "1", "x")}
			if g.rng.IntN(2) == 0 {
				args = append(args, g.pick("NX", "XX", "GT", "LT"))
			}
		}
		return diffCmdOf(exact, args...)
	case 4:
		if g.rng.IntN(2) == 0 {
			return diffCmdOf(sign, g.pick("TTL", "EXPIRETIME"), k)
		}
		return diffCmdOf(exact, "PERSIST", k)
	case 5:
		if g.rng.IntN(4) == 0 {
			return diffCmdOf(scanKeys, "SCAN", "0", "COUNT", "1000", "TYPE", g.pick("string", "hash", "HASH", "set", "list"))
		}
		return diffCmdOf(exact, g.pick("RENAME", "RENAMENX"), k, g.key())
	default:
		if g.rng.IntN(50) == 0 {
			return diffCmdOf(exact, "FLUSHALL")
		}
		return diffCmdOf(exact, "PEXPIRE", k, "100000")
	}
}

// diffRound sends one round of commands to both servers, pipelined, and
// fails at the first reply that differs; it returns lsmgo's replies.
func diffRound(t *testing.T, round int, cmds [][]string, ours, theirs *diffConn) []resp.Value {
	t.Helper()
	for _, args := range cmds {
		ours.send(args)
		theirs.send(args)
	}
	got, err := ours.flushRead(len(cmds))
	if err != nil {
		t.Fatalf("lsmgo: %v", err)
	}
	want, err := theirs.flushRead(len(cmds))
	if err != nil {
		t.Fatalf("redis: %v", err)
	}
	for i, args := range cmds {
		if g, w := render(got[i], exact), render(want[i], exact); g != w {
			t.Fatalf("round %d, %q:\n lsmgo: %s\n redis: %s", round, args, g, w)
		}
	}
	return got
}
