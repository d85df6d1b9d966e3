package server

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/vfs"
	"github.com/redis/go-redis/v9"
)

// TestDatabasesOldDirectory: a directory written before databases (no map
// of databases, keys under 'k' + key) opens with its keys in database 0,
// and databases written since stay apart across restarts.
func TestDatabasesOldDirectory(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	restart := func() *Server {
		return startServer(t, func(c *Config) { c.Dir = dir })
	}
	s := restart()
	c := newClient(t, s, 2, nil)
	for _, err := range []error{c.Set(ctx, "s", "old", 0).Err(), c.HSet(ctx, "h", "f", "old").Err()} {
		if err != nil {
			t.Fatal(err)
		}
	}
	stop(t, s)
	// What a server before databases left: no map, and the keys at 'k' +
	// key exactly.
	db, err := lsmgo.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Delete([]byte(dbsKey), lsmgo.Sync); err != nil {
		t.Fatal(err)
	}
	if v, err := db.Get([]byte("ks")); err != nil || string(v) != "sold" {
		t.Fatalf("engine key %q = %q, %v; want the layout of before databases", "ks", v, err)
	}
	db.Close()

	s = restart()
	c0 := newClient(t, s, 2, nil)
	c1 := newClient(t, s, 2, func(o *redis.Options) { o.DB = 1 })
	eq(t, "GET s in db 0", c0.Get(ctx, "s").Val(), "old")
	eq(t, "HGET h f in db 0", c0.HGet(ctx, "h", "f").Val(), "old")
	eq(t, "DBSIZE of db 1", c1.DBSize(ctx).Val(), int64(0))
	for _, err := range []error{c1.Set(ctx, "s", "one", 0).Err(), c1.HSet(ctx, "h", "f", "one").Err()} {
		if err != nil {
			t.Fatal(err)
		}
	}
	stop(t, s)

	s = restart()
	c0 = newClient(t, s, 2, nil)
	c1 = newClient(t, s, 2, func(o *redis.Options) { o.DB = 1 })
	for _, tc := range []struct {
		c    *redis.Client
		want string
	}{{c0, "old"}, {c1, "one"}} {
		eq(t, "GET s", tc.c.Get(ctx, "s").Val(), tc.want)
		eq(t, "HGET h f", tc.c.HGet(ctx, "h", "f").Val(), tc.want)
		eq(t, "DBSIZE", tc.c.DBSize(ctx).Val(), int64(2))
	}
}

// stop shuts s down now (its cleanup's second Shutdown is a no-op).
func stop(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestFilterDropsDeadNamespaces pins the compaction filter's verdicts on
// the keys of namespaces no database maps to.
func TestFilterDropsDeadNamespaces(t *testing.T) {
	db, err := lsmgo.Open("/db", &lsmgo.Options{FS: vfs.NewMem(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Database 0 flushed (0 → 3), databases 1 and 2 swapped, 4 handed
	// out and flushed; 5 and up never handed out.
	m := &dbMap{next: 5, ns: []nsID{3, 2, 1}}
	if err := db.Set([]byte(dbsKey), m.encode(), nil); err != nil {
		t.Fatal(err)
	}
	ks := &keyspace{db: db}
	b := db.NewBatch()
	for _, ns := range []nsID{0, 1, 3} {
		ks.putColl(b, &keyBuf{ns: ns}, []byte("h"), collMeta{typ: typeHash, version: 7, count: 1})
	}
	if err := db.Apply(b, nil); err != nil {
		t.Fatal(err)
	}
	f := newElemFilter(db)
	for _, tc := range []struct {
		ns             nsID
		dead, withMeta bool
	}{{0, true, true}, {1, false, true}, {2, false, false}, {3, false, true}, {4, true, false}, {5, false, false}} {
		if got := f.Drop(dataKey(nil, tc.ns, []byte("h"))); got != tc.dead {
			t.Errorf("namespace %d: Drop(metadata) = %v, want %v", tc.ns, got, tc.dead)
		}
		// Elements die with their namespace, or without their metadata.
		elem := elemKey(nil, []byte("h"), collMeta{ns: tc.ns, version: 7}, []byte("a"))
		if got, want := f.Drop(elem), tc.dead || !tc.withMeta; got != want {
			t.Errorf("namespace %d: Drop(element) = %v, want %v", tc.ns, got, want)
		}
	}
}

// TestFlushDBReclaims: the keys of a flushed database leave the engine
// once compacted, not just the database.
func TestFlushDBReclaims(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	c := newClient(t, s, 2, func(o *redis.Options) { o.DB = 3 })
	pairs := make([]any, 0, 2*reclaimMinElems)
	for i := range reclaimMinElems {
		pairs = append(pairs, fmt.Sprint("key", i), "v")
	}
	if err := c.MSet(ctx, pairs...).Err(); err != nil {
		t.Fatal(err)
	}
	ns := s.ks.dbs.Load().ns[3]
	if err := c.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	eq(t, "DBSIZE after FLUSHDB", c.DBSize(ctx).Val(), int64(0))
	waitFor(t, "the reclaimer", s.ks.reclaim.idle)
	lo, hi := dataBounds(ns)
	it, err := s.DB().NewIter(&lsmgo.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if it.First() {
		t.Fatalf("the flushed namespace %d still holds %q after its compaction", ns, it.Key())
	}
}

// TestDatabasesCommands covers what the differential test cannot: a
// script's SELECT, INFO keyspace, CLIENT LIST, SWAPDB waking a blocked
// client and marking WATCH, and the databases setting.
func TestDatabasesCommands(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Databases = 4 })
	ctx := context.Background()
	c := newClient(t, s, 2, func(o *redis.Options) { o.PoolSize = 1 })
	runSteps(t, c, []step{
		{args: []any{"SELECT", "3"}, want: "OK"},
		{args: []any{"SELECT", "4"}, err: "ERR DB index is out of range"},
		{args: []any{"SELECT", "0"}, want: "OK"},
		// A script starts in its caller's database; its SELECT stays
		// inside it.
		{args: []any{"EVAL", "redis.call('select', 2) redis.call('set', 'x', 'in2') return redis.call('get', 'x')", "0"}, want: "in2"},
		{args: []any{"EXISTS", "x"}, want: int64(0)},
		{args: []any{"SET", "y", "in0", "EX", "100"}, want: "OK"},
		{args: []any{"MOVE", "y", "2"}, want: int64(1)},
		{args: []any{"MOVE", "y", "2"}, want: int64(0)},
		{args: []any{"MOVE", "y", "0"}, err: "ERR source and destination objects are the same"},
		{args: []any{"CONFIG", "GET", "databases"}, want: []any{"databases", "4"}},
	})
	info := c.Info(ctx, "keyspace").Val()
	if !strings.Contains(info, "db2:keys=2,expires=1,avg_ttl=0") || strings.Contains(info, "db0:") {
		t.Errorf("INFO keyspace:\n%s", info)
	}
	if list := c.ClientList(ctx).Val(); !strings.Contains(list, " db=0 ") {
		t.Errorf("CLIENT LIST after the script: %s", list)
	}
	c.Do(ctx, "SELECT", "2")
	if list := c.ClientList(ctx).Val(); !strings.Contains(list, " db=2 ") {
		t.Errorf("CLIENT LIST after SELECT 2: %s", list)
	}

	// A client blocked on a key in database 1 is served when SWAPDB
	// brings it a list there.
	blocked := newClient(t, s, 2, func(o *redis.Options) { o.DB = 1; o.PoolSize = 1 })
	got := make(chan []string, 1)
	go func() { got <- blocked.BLPop(ctx, 10*time.Second, "q").Val() }()
	waitFor(t, "the client to block", func() bool { return strings.Contains(c.Info(ctx, "clients").Val(), "blocked_clients:1") })
	c.RPush(ctx, "q", "from2") // in database 2
	watcher := newClient(t, s, 2, func(o *redis.Options) { o.DB = 1; o.PoolSize = 1 })
	err := watcher.Watch(ctx, func(tx *redis.Tx) error {
		if err := c.Do(ctx, "SWAPDB", 1, 2).Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Set(ctx, "w", "1", 0).Err() })
		return err
	}, "y")
	if err != redis.TxFailedErr {
		t.Errorf("EXEC after SWAPDB brought a watched key: %v, want the transaction to fail", err)
	}
	select {
	case v := <-got:
		eq(t, "BLPOP served by SWAPDB", strings.Join(v, " "), "q from2")
	case <-time.After(10 * time.Second):
		t.Fatal("SWAPDB did not serve the client blocked on q")
	}
}

// TestSwapDBUnderLoad swaps two databases while clients read and write
// them, pipelined and in transactions: no command fails, a key never
// holds a value written to the other database, and (under -race) the
// namespace handover is free of data races. Each database's writers
// stamp their values with a tag that moves with the database: db 0's
// "tag" key names the tag its writers use, read in the same transaction.
func TestSwapDBUnderLoad(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	for db, tag := range []string{"A", "B"} {
		c := newClient(t, s, 2, func(o *redis.Options) { o.DB = db })
		if err := c.Set(ctx, "tag", tag, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Second)
	errs := make(chan error, 8)
	for w := range 4 {
		db := w % 2
		c := newClient(t, s, 2, func(o *redis.Options) { o.DB = db; o.PoolSize = 1 })
		go func() {
			for i := 0; time.Now().Before(deadline); i++ {
				// The tag and the write in one transaction: the value
				// written carries the tag of the database it lands in.
				_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Eval(ctx, "return redis.call('set', 'k'..ARGV[1], redis.call('get', 'tag'))", nil, i%8)
					p.Get(ctx, "tag")
					return nil
				})
				if err == nil {
					var cmds []redis.Cmder
					cmds, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
						p.Get(ctx, "tag")
						p.Get(ctx, fmt.Sprint("k", i%8))
						return nil
					})
					if err == nil || err == redis.Nil {
						tag, v := cmds[0].(*redis.StringCmd).Val(), cmds[1].(*redis.StringCmd).Val()
						if v != "" && v != tag {
							err = fmt.Errorf("database tagged %s holds k%d = %s", tag, i%8, v)
						} else {
							err = nil
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	swapper := newClient(t, s, 2, nil)
	swaps := 0
	for time.Now().Before(deadline) {
		if err := swapper.Do(ctx, "SWAPDB", 0, 1).Err(); err != nil {
			t.Fatal(err)
		}
		swaps++
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d swaps", swaps)
}
