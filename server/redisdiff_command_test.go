package server

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// TestCommandKeysRedis sends COMMAND GETKEYS and GETKEYSANDFLAGS of
// seeded random argument lists, for every command both servers have, to
// redis-server and this server, in both protocols, and requires the same
// replies: the keys, their flags and the errors. The arguments are drawn
// from the keywords key specs and getkeys rules look for, counts and
// plain words, so that numkeys, STORE, STREAMS, KEYS and GET land in
// every position.
func TestCommandKeysRedis(t *testing.T) {
	sock := startRedis(t)
	s := startServer(t, nil)
	pool := []string{"k", "x", "0", "1", "2", "3", "-1", "STORE", "STOREDIST", "STREAMS", "KEYS", "GET",
		"BY", "LIMIT", "SET", "INCRBY", "OVERFLOW", "", "AUTH", "AUTH2", "COPY", "withscores"}
	names := commonCommandNames(t, sock, s)
	compared := 0
	for proto := 2; proto <= 3; proto++ {
		theirs := testutil.Dial(t, "unix", sock)
		ours := testutil.Dial(t, "tcp", s.Addr().String())
		for _, c := range []*testutil.Client{theirs, ours} {
			mustDo(t, c, "HELLO", strconv.Itoa(proto))
		}
		rng := newRand(int64(proto))
		for _, name := range names {
			for range 12 {
				args := []string{"COMMAND", "GETKEYS"}
				if rng.IntN(2) == 0 {
					args[1] = "GETKEYSANDFLAGS"
				}
				args = append(args, strings.Split(name, "|")...)
				for range rng.IntN(9) {
					args = append(args, pool[rng.IntN(len(pool))])
				}
				want, got := render(doStrings(t, theirs, args), exact), render(doStrings(t, ours, args), exact)
				if got != want {
					t.Errorf("resp%d %q:\n lsmgo: %s\n redis: %s", proto, args, got, want)
				}
				compared++
			}
		}
		for _, args := range [][]string{
			{"COMMAND", "GETKEYS", "nosuch", "k"},
			{"COMMAND", "GETKEYS", "ping", "k"},
			{"COMMAND", "GETKEYS", "memory", "nosuch", "k"},
			{"COMMAND", "GETKEYS"},
			{"COMMAND", "LIST", "bad"},
			{"COMMAND", "LIST", "FILTERBY", "bad", "x"},
			{"COMMAND", "LIST", "FILTERBY", "MODULE", "x"},
			{"COMMAND", "LIST", "FILTERBY", "PATTERN", "x", "y"},
			{"COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuch"},
			{"COMMAND", "INFO", "get|key", "config|get|x", "nosuch"},
		} {
			want, got := render(doStrings(t, theirs, args), exact), render(doStrings(t, ours, args), exact)
			if got != want {
				t.Errorf("resp%d %q:\n lsmgo: %s\n redis: %s", proto, args, got, want)
			}
		}
	}
	t.Logf("%d GETKEYS compared over %d commands", compared, len(names))
}

// TestCommandInfoRedis compares COMMAND INFO's movablekeys flag and key
// specs (less Redis' prose notes) with redis-server's for every command
// both have, and COMMAND LIST's filters on the commands both have.
func TestCommandInfoRedis(t *testing.T) {
	sock := startRedis(t)
	s := startServer(t, nil)
	theirs := testutil.Dial(t, "unix", sock)
	ours := testutil.Dial(t, "tcp", s.Addr().String())
	for _, c := range []*testutil.Client{theirs, ours} {
		mustDo(t, c, "HELLO", "3")
	}
	names := commonCommandNames(t, sock, s)
	for _, name := range names {
		want := commandInfoFacts(mustDo(t, theirs, "COMMAND", "INFO", name).Array[0])
		got := commandInfoFacts(mustDo(t, ours, "COMMAND", "INFO", name).Array[0])
		if got != want {
			t.Errorf("COMMAND INFO %s:\n lsmgo: %s\n redis: %s", name, got, want)
		}
	}
	for _, filter := range [][]string{nil, {"ACLCAT", "scripting"}, {"ACLCAT", "write"}, {"PATTERN", "config*"},
		{"PATTERN", "cl*help"}, {"PATTERN", "Z*STORE"}, {"PATTERN", "set"}} {
		args := []string{"COMMAND", "LIST"}
		if filter != nil {
			args = append(append(args, "FILTERBY"), filter...)
		}
		want := commonNames(mustDo(t, theirs, args...), names)
		got := commonNames(mustDo(t, ours, args...), names)
		if !slices.Equal(got, want) {
			t.Errorf("%q:\n lsmgo: %q\n redis: %q", args, got, want)
		}
	}
}

// commandInfoFacts renders what the comparison covers of one COMMAND
// INFO entry: name, arity, whether movablekeys, and key specs.
func commandInfoFacts(v resp.Value) string {
	movable := slices.ContainsFunc(v.Array[2].Array, func(f resp.Value) bool { return string(f.Str) == "movablekeys" })
	var specs []string
	for _, ks := range v.Array[8].Array {
		var kept resp.Value
		kept.Type = ks.Type
		for i := 0; i+1 < len(ks.Array); i += 2 {
			if string(ks.Array[i].Str) != "notes" {
				kept.Array = append(kept.Array, ks.Array[i], ks.Array[i+1])
			}
		}
		specs = append(specs, render(kept, exact))
	}
	return string(v.Array[0].Str) + " arity=" + strconv.FormatInt(v.Array[1].Int, 10) +
		" movablekeys=" + strconv.FormatBool(movable) + " specs=" + strings.Join(specs, " ")
}

// commonCommandNames lists the commands and subcommands both servers
// have, by COMMAND LIST, less ZRANK and ZREVRANK, whose arity is Redis
// 7.2's (WITHSCORE).
func commonCommandNames(t *testing.T, sock string, s *Server) []string {
	theirs := mustDo(t, testutil.Dial(t, "unix", sock), "COMMAND", "LIST")
	var ours []string
	for _, v := range mustDo(t, testutil.Dial(t, "tcp", s.Addr().String()), "COMMAND", "LIST").Array {
		if n := string(v.Str); n != "zrank" && n != "zrevrank" {
			ours = append(ours, n)
		}
	}
	return commonNames(theirs, ours)
}

// commonNames returns the names in list that are also in among, sorted.
func commonNames(list resp.Value, among []string) []string {
	var out []string
	for _, v := range list.Array {
		if slices.Contains(among, string(v.Str)) {
			out = append(out, string(v.Str))
		}
	}
	slices.Sort(out)
	return out
}
