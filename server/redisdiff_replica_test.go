package server

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestRedisDiffReplica runs TestRedisDiff's seeded command sequences
// (diffGen) with lsmgo split in two, as a client of a primary and its
// replicas would use it: every read-only command goes to the replica,
// once it has applied everything written before it (WAIT 1 0 on the
// primary), and every other command to the primary; redis-server answers
// them all on one connection. The replies must match as in TestRedisDiff.
func TestRedisDiffReplica(t *testing.T) {
	const seeds = 2
	const perSeed = 4000
	redisSock := startRedis(t)
	primary := startServer(t, nil)
	replica, _ := startReplica(t, primary)
	reads := 0
	for seed := range uint64(seeds) {
		proto := 2 + int(seed%2)
		t.Run(fmt.Sprintf("seed=%d/resp%d", seed, proto), func(t *testing.T) {
			p := dialDiff(t, "tcp", primary.Addr().String(), proto)
			r := dialDiff(t, "tcp", replica.Addr().String(), proto)
			theirs := dialDiff(t, "unix", redisSock, proto)
			p.do(t, "FLUSHALL")
			theirs.do(t, "FLUSHALL")
			reads += runDiffReplica(t, seed, proto, perSeed, p, r, theirs, replica)
		})
	}
	t.Logf("%d reads answered by the replica", reads)
}

// runDiffReplica is runDiff for a primary p and its replica r, one
// command at a time; it returns how many the replica answered.
func runDiffReplica(t *testing.T, seed uint64, proto, perSeed int, p, r, theirs *diffConn, replica *Server) int {
	g := &diffGen{rng: rand.New(rand.NewPCG(seed+100, 0x1a2b3c)), proto: proto}
	inMulti, behind, reads := false, false, 0
	for i := range perSeed {
		cmd := g.next()
		name := strings.ToUpper(cmd.args[0])
		ours := p
		if !inMulti && readOnlyCommand(cmd.args) {
			ours = r
			reads++
			if behind {
				p.send([]string{"WAIT", "1", "0"})
				if v, err := p.flushRead(1); err != nil || v[0].Int != 1 {
					t.Fatalf("WAIT 1 0 on the primary: %v %v", v, err)
				}
				behind = false
			}
		} else {
			behind = true
			switch name {
			case "MULTI":
				inMulti = true
			case "EXEC", "DISCARD", "RESET":
				inMulti = false
			}
			if name == "SELECT" || name == "RESET" {
				r.do(t, cmd.args...) // the replica's connection reads the same database
			}
		}
		at := lastSeq(replica)
		ours.send(cmd.args)
		theirs.send(cmd.args)
		got, err := ours.flushRead(1)
		if err != nil {
			t.Fatalf("lsmgo: %v", err)
		}
		if ours == r && lastSeq(replica) != at {
			t.Fatalf("seed %d, command %d %q wrote on the replica", seed, i, cmd.args)
		}
		want, err := theirs.flushRead(1)
		if err != nil {
			t.Fatalf("redis: %v", err)
		}
		if g, w := renderReply(got[0], cmd), renderReply(want[0], cmd); g != w {
			where := "primary"
			if ours == r {
				where = "replica"
			}
			t.Fatalf("seed %d, command %d %q on the %s:\n lsmgo: %s\n redis: %s", seed, i, cmd.args, where, g, w)
		}
	}
	return reads
}

// readOnlyCommand reports whether args is a command (or subcommand) that
// only reads, which a replica serves. PFCOUNT is not: on a primary it
// writes the cardinality it caches in the value (Redis' may-replicate),
// which a later GET shows.
func readOnlyCommand(args []string) bool {
	if strings.EqualFold(args[0], "PFCOUNT") {
		return false
	}
	cmd := lookupFullName(strings.ToLower(args[0]))
	if cmd != nil && cmd.subs != nil && len(args) > 1 {
		cmd = cmd.subs[strings.ToLower(args[1])]
	}
	return cmd != nil && cmd.flags&flagReadonly != 0 && cmd.flags&flagWrite == 0
}
