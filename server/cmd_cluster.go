package server

// CLUSTER: lsmgo has no cluster mode (it shards behind a proxy instead,
// doc/scale-out.md), so every subcommand answers as Redis does with
// cluster-enabled no; they exist so that clients probing for a cluster,
// COMMAND and ACL rules see Redis' command table.
func init() {
	const a, st, ld = flagAdmin, flagStale, flagLoading
	subs := []spec{}
	for _, s := range []struct {
		name  string
		arity int
		flags cmdFlags
	}{
		{"addslots", -3, a | st}, {"addslotsrange", -4, a | st}, {"bumpepoch", 2, a | st},
		{"count-failure-reports", 3, a | st}, {"countkeysinslot", 3, st}, {"delslots", -3, a | st},
		{"delslotsrange", -4, a | st}, {"failover", -2, a | st}, {"flushslots", 2, a | st},
		{"forget", 3, a | st}, {"getkeysinslot", 4, st}, {"help", 2, ld | st}, {"info", 2, st},
		{"keyslot", 3, st}, {"links", 2, st}, {"meet", -4, a | st}, {"myid", 2, st},
		{"nodes", 2, st}, {"replicas", 3, a | st}, {"replicate", 3, a | st}, {"reset", -2, a | st},
		{"saveconfig", 2, a | st}, {"set-config-epoch", 3, a | st}, {"setslot", -4, a | st},
		{"shards", 2, st}, {"slaves", 3, a | st}, {"slots", 2, st},
	} {
		subs = append(subs, spec{name: s.name, arity: s.arity, flags: s.flags, since: "3.0.0",
			summary: "Fails: cluster support is disabled.", run: cmdCluster})
	}
	register(spec{name: "cluster", arity: -2, group: "cluster", since: "3.0.0",
		summary: "A container for Redis Cluster commands.", subs: subs})
}

func cmdCluster(*conn, *command, [][]byte) error {
	return redisError("ERR This instance has cluster support disabled")
}
