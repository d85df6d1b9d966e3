package server

// The sorted sets' blocking pops join TestBlockingDiff's scenarios.
func init() {
	blockScenarios["BZPOPMIN, BZPOPMAX and BZMPOP in arrival order"] = []blockStep{
		{client: 0, args: []string{"BZPOPMIN", "z", "0"}, blocks: true},
		{client: 1, args: []string{"BZPOPMAX", "z", "0"}, blocks: true},
		{client: 2, args: []string{"BZMPOP", "0", "1", "z", "MIN", "COUNT", "2"}, blocks: true},
		{client: 3, args: []string{"BZPOPMIN", "z", "0"}, blocks: true},
		{client: 4, args: []string{"ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"}},
		{client: 4, args: []string{"ZRANGE", "z", "0", "-1", "WITHSCORES"}},
	}
	blockScenarios["BZPOPMIN on several keys"] = []blockStep{
		{client: 0, args: []string{"BZPOPMIN", "z1", "0"}, blocks: true},
		{client: 1, args: []string{"BZPOPMAX", "z1", "z2", "0"}, blocks: true},
		{client: 2, args: []string{"ZADD", "z2", "1", "x"}},
		{client: 2, args: []string{"ZINCRBY", "z1", "2.5", "y"}},
		{client: 2, args: []string{"EXISTS", "z1", "z2"}},
	}
	blockScenarios["sorted sets stored onto a watched key"] = []blockStep{
		{client: 0, args: []string{"BZPOPMAX", "dst", "0"}, blocks: true},
		{client: 1, args: []string{"BZMPOP", "0", "1", "dst", "MAX", "COUNT", "5"}, blocks: true},
		{client: 2, args: []string{"ZADD", "src", "1", "a", "2", "b", "3", "c"}},
		{client: 2, args: []string{"ZUNIONSTORE", "dst", "1", "src", "WEIGHTS", "2"}},
		{client: 2, args: []string{"ZRANGESTORE", "dst", "src", "0", "1"}},
		{client: 2, args: []string{"RENAME", "src", "dst"}},
		{client: 2, args: []string{"ZCARD", "dst"}},
	}
	blockScenarios["a list does not wake BZPOPMIN"] = []blockStep{
		{client: 0, args: []string{"BZPOPMIN", "k", "0"}, blocks: true},
		{client: 1, args: []string{"RPUSH", "k", "x"}},
		{client: 1, args: []string{"DEL", "k"}},
		{client: 1, args: []string{"ZADD", "k", "-inf", "m"}},
		{client: 1, args: []string{"TYPE", "k"}},
	}
	blockScenarios["BZPOP timeouts"] = []blockStep{
		{client: 0, args: []string{"BZPOPMIN", "k", "0.1"}, timesOut: true},
		{client: 1, args: []string{"BZPOPMAX", "k", "k2", "0.1"}, timesOut: true},
		{client: 2, args: []string{"BZMPOP", "0.1", "1", "k", "MAX"}, timesOut: true},
	}
}
