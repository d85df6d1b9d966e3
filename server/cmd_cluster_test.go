package server

import (
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// TestClusterLikeRedis: without cluster mode every CLUSTER subcommand
// fails as redis-server's does (cluster-enabled no), arity and unknown
// subcommands included, and a script may not call CLUSTER RESET.
func TestClusterLikeRedis(t *testing.T) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	for _, proto := range []int{2, 3} {
		ours := dialDiff(t, "tcp", s.Addr().String(), proto)
		theirs := dialDiff(t, "unix", redisSock, proto)
		diffSequence(t, ours, theirs, [][]string{
			{"CLUSTER", "INFO"}, {"cluster", "help"}, {"CLUSTER", "NODES"}, {"CLUSTER", "SLOTS"},
			{"CLUSTER", "KEYSLOT", "k"}, {"CLUSTER", "KEYSLOT"}, {"CLUSTER", "RESET", "HARD"},
			{"CLUSTER", "SETSLOT", "1"}, {"CLUSTER", "nosuch"}, {"CLUSTER"},
			{"EVAL", "return redis.call('cluster', 'reset', 'hard')", "0"},
			{"EVAL", "return redis.pcall('cluster', 'info')", "0"},
		}, func(v resp.Value) string { return render(v, exact) })
	}
}
