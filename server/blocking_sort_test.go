package server

import "github.com/lsmgo-dev/lsmgo/server/internal/rdb"

// SORT … STORE and RESTORE write lists like any push: their blocked
// waiters wake (TestBlockingDiff's scenarios, against redis-server too).
func init() {
	list := string(rdb.Seal([]byte{rdb.TypeList, 2, 1, 'a', 1, 'b'}))
	blockScenarios["SORT STORE and RESTORE wake blocked pops"] = []blockStep{
		{client: 0, args: []string{"BLPOP", "dst", "0"}, blocks: true},
		{client: 1, args: []string{"BLMPOP", "0", "1", "dst", "LEFT", "COUNT", "5"}, blocks: true},
		{client: 3, args: []string{"BRPOP", "r", "0"}, blocks: true},
		{client: 2, args: []string{"RPUSH", "src", "3", "1", "2"}},
		{client: 2, args: []string{"SORT", "src", "STORE", "dst"}},
		{client: 2, args: []string{"EXISTS", "dst"}},
		{client: 2, args: []string{"RESTORE", "r", "0", list}},
		{client: 2, args: []string{"LRANGE", "r", "0", "-1"}},
	}
}
