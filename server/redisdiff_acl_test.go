package server

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// TestRedisDiffACL sends the same seeded random ACL SETUSER rules to the
// server and to a real redis-server and requires the same replies, the
// same GETUSER flags, passwords, keys and channels, the same permission
// for a pool of commands over keys and channels that the patterns match
// or miss (ACL DRYRUN), the same answer to AUTH, and the same refusal of
// a command sent as the user. Redis 7.0 (the
// Debian package) words NOPERM as "This user has no permissions …",
// Redis 7.2 (and lsmgo) as "User NAME has no permissions …": the 7.0
// wording is mapped before comparing. How the command rules are printed
// differs too (7.0 re-derives them, 7.2 keeps them as given), so the
// commands field is compared through its effect.
func TestRedisDiffACL(t *testing.T) {
	const seeds, rounds = 3, 150
	redisSock := startRedis(t)
	s := startServer(t, nil)
	ours := dialDiff(t, "tcp", s.Addr().String(), 2)
	theirs := dialDiff(t, "unix", redisSock, 2)
	compared, refusals := 0, 0
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 0xac1))
		for round := range rounds {
			user := fmt.Sprintf("u%d", rng.IntN(4))
			cmds := [][]string{append([]string{"ACL", "SETUSER", user}, randomRules(rng)...)}
			cmds = append(cmds, []string{"ACL", "GETUSER", user})
			for range 12 {
				cmds = append(cmds, append([]string{"ACL", "DRYRUN", user}, randomProbe(rng)...))
			}
			var replies [2][]resp.Value
			for i, d := range []*diffConn{ours, theirs} {
				for _, args := range cmds {
					d.send(args)
				}
				var err error
				if replies[i], err = d.flushRead(len(cmds)); err != nil {
					t.Fatal(err)
				}
			}
			for i, cmd := range cmds {
				a, b := aclView(replies[0][i], cmd), aclView(replies[1][i], cmd)
				if a != b {
					for _, d := range []*diffConn{ours, theirs} {
						d.send([]string{"ACL", "LIST"})
						r, _ := d.flushRead(1)
						t.Log(render(r[0], exact))
					}
					t.Fatalf("seed %d round %d: %q\nlsmgo: %s\nredis: %s", seed, round, cmd, a, b)
				}
				compared++
			}
			if compareAuth(t, rng, s.Addr().String(), redisSock, user) {
				refusals++
			}
		}
	}
	t.Logf("%d replies compared; %d commands refused as a user, alike", compared, refusals)
}

// aclView renders a reply for comparison: Redis 7.0's NOPERM wording
// mapped to 7.2's, and GETUSER without its commands fields.
func aclView(v resp.Value, cmd []string) string {
	if len(cmd) > 1 && cmd[1] == "GETUSER" && len(v.Array) == 12 {
		var b strings.Builder
		for i := 0; i < 12; i += 2 {
			switch string(v.Array[i].Str) {
			case "commands":
			case "selectors":
				for _, sel := range v.Array[i+1].Array {
					b.WriteString("(" + render(sel.Array[3], exact) + render(sel.Array[5], exact) + ")")
				}
			default:
				b.WriteString(render(v.Array[i], exact) + "=" + render(v.Array[i+1], exact) + ";")
			}
		}
		return b.String()
	}
	r := render(v, exact)
	r = strings.Replace(r, "This user has no permissions to run", "User "+argAt(cmd, 2)+" has no permissions to run", 1)
	return strings.Replace(r, "This user has no permissions to access", "No permissions to access", 1)
}

func argAt(cmd []string, i int) string {
	if i < len(cmd) {
		return cmd[i]
	}
	return ""
}

// compareAuth authenticates as user with a password from the pool on
// both servers and requires the same reply; when both let the user in,
// it runs a probe command as the user on each and requires the same
// refusal, if either refuses it (the command path's check).
func compareAuth(t *testing.T, rng *rand.Rand, addr, sock, user string) (refused bool) {
	t.Helper()
	pass := aclPasswords[rng.IntN(len(aclPasswords))]
	probe := randomProbe(rng)
	a, b := dialDiff(t, "tcp", addr, 2), dialDiff(t, "unix", sock, 2)
	var auth, ran [2]string
	for i, d := range []*diffConn{a, b} {
		d.send([]string{"AUTH", user, pass})
		d.send(probe)
		r, err := d.flushRead(2)
		if err != nil {
			t.Fatal(err)
		}
		auth[i], ran[i] = render(r[0], exact), nopermView(r[1], user)
		d.nc.Close()
	}
	if auth[0] != auth[1] {
		t.Fatalf("AUTH %s %s: lsmgo %s, redis %s", user, pass, auth[0], auth[1])
	}
	refused = strings.Contains(ran[0], "NOPERM") || strings.Contains(ran[1], "NOPERM")
	if refused && ran[0] != ran[1] {
		t.Fatalf("as %s (AUTH %s), %q:\nlsmgo: %s\nredis: %s", user, pass, probe, ran[0], ran[1])
	}
	return refused
}

// nopermView renders a reply with Redis 7.0's NOPERM wording mapped to
// 7.2's.
func nopermView(v resp.Value, user string) string {
	return strings.NewReplacer(
		"NOPERM this user has no permissions to run", "NOPERM User "+user+" has no permissions to run",
		"NOPERM this user has no permissions to access one of the keys used as arguments", "NOPERM No permissions to access a key",
		"NOPERM this user has no permissions to access one of the channels used as arguments", "NOPERM No permissions to access a channel",
	).Replace(render(v, exact))
}

var (
	aclPasswords = []string{"p1", "p2", "secret"}
	aclKeyPool   = []string{"foo", "foobar", "rkey", "wkey", "h1", "h2", "other"}
	aclPatterns  = []string{"foo*", "r*", "w*", "h[12]", "*", "other", "f?o"}
	aclChanPool  = []string{"news", "news.1", "chat", "ch*"}
	aclChanPats  = []string{"news*", "chat", "ch*", "*"}
	aclCommands  = []string{"get", "set", "hget", "hset", "lmove", "mset", "mget", "del", "incr",
		"publish", "subscribe", "psubscribe", "select", "config", "config|get", "client|info",
		"eval", "zunionstore", "smove", "bitfield", "ping", "exists", "debug", "acl|whoami"}
)

// randomRules returns one to five rules, an occasional one invalid.
func randomRules(rng *rand.Rand) []string {
	pick := func(pool []string) string { return pool[rng.IntN(len(pool))] }
	n := 1 + rng.IntN(5)
	rules := make([]string, 0, n)
	for range n {
		var r string
		switch rng.IntN(22) {
		case 0:
			r = pick([]string{"on", "off"})
		case 1:
			r = ">" + pick(aclPasswords)
		case 2:
			r = "<" + pick(aclPasswords)
		case 3:
			r = pick([]string{"nopass", "resetpass", "reset"})
		case 4, 5:
			r = pick([]string{"~", "%R~", "%W~", "%RW~"}) + pick(aclPatterns)
		case 6:
			r = pick([]string{"allkeys", "resetkeys"})
		case 7:
			r = "&" + pick(aclChanPats)
		case 8:
			r = pick([]string{"allchannels", "resetchannels"})
		case 9, 10, 11:
			r = pick([]string{"+", "-"}) + pick(aclCommands)
		case 12, 13:
			r = pick([]string{"+", "-"}) + "@" + pick(aclCategoryNames)
		case 14:
			r = pick([]string{"+select|0", "+select|1", "+config|get", "-config|set", "+client|info"})
		case 15:
			r = pick([]string{"allcommands", "nocommands", "+@all", "-@all"})
		case 16:
			r = "(" + pick([]string{"+", "-"}) + pick(aclCommands) + " ~" + pick(aclPatterns) + ")"
		case 17:
			r = "(+@" + pick(aclCategoryNames) + " %R~" + pick(aclPatterns) + " &" + pick(aclChanPats) + ")"
		case 18:
			r = "clearselectors"
		case 19:
			r = pick([]string{"bogus", "+nosuch", "%X~a", "#abc", "+config|get|x", "-select|0", "+@nosuch"})
		default:
			r = "#" + passwordHash([]byte(pick(aclPasswords)))
		}
		rules = append(rules, r)
	}
	return rules
}

// randomProbe returns a command with arguments for ACL DRYRUN.
func randomProbe(rng *rand.Rand) []string {
	k := func() string { return aclKeyPool[rng.IntN(len(aclKeyPool))] }
	ch := func() string { return aclChanPool[rng.IntN(len(aclChanPool))] }
	switch rng.IntN(20) {
	case 0:
		return []string{"get", k()}
	case 1:
		return []string{"set", k(), "v"}
	case 2:
		return []string{"set", k(), "v", "GET"}
	case 3:
		return []string{"hget", k(), "f"}
	case 4:
		return []string{"lmove", k(), k(), "LEFT", "RIGHT"}
	case 5:
		return []string{"mset", k(), "1", k(), "2"}
	case 6:
		return []string{"del", k(), k()}
	case 7:
		return []string{"publish", ch(), "m"}
	case 8:
		return []string{"subscribe", ch(), ch()}
	case 9:
		return []string{"psubscribe", ch()}
	case 10:
		return []string{"select", fmt.Sprint(rng.IntN(2))}
	case 11:
		return []string{"config", "get", "maxmemory"}
	case 12:
		return []string{"client", "info"}
	case 13:
		return []string{"eval", "return 1", "2", k(), k()}
	case 14:
		return []string{"zunionstore", k(), "2", k(), k()}
	case 15:
		return []string{"smove", k(), k(), "m"}
	case 16:
		return []string{"bitfield", k(), "GET", "u8", "0"}
	case 17:
		return []string{"bitfield", k(), "SET", "u8", "0", "1"}
	case 18:
		return []string{"exists", k()}
	default:
		return []string{"incr", k()}
	}
}
