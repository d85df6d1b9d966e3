package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/hll"
	"github.com/redis/go-redis/v9"
)

// killType is one collection type as the kill -9 test writes it: write
// adds elems to key in one command, has reports whether elem is in key.
type killType struct {
	name  string
	write func(ctx context.Context, rc *redis.Client, key string, elems []string) error
	has   func(ctx context.Context, rc *redis.Client, key, elem string) (bool, error)
}

// lossyKillTypes are the types whose has may report an element never
// added (a HyperLogLog register another element raised): only their
// acknowledged elements are checked.
var lossyKillTypes = map[string]bool{"hll": true}

var killTypes = []killType{
	{"hash",
		func(ctx context.Context, rc *redis.Client, key string, elems []string) error {
			args := make([]any, 0, 2*len(elems))
			for _, e := range elems {
				args = append(args, e, "v"+e)
			}
			return rc.HSet(ctx, key, args...).Err()
		},
		func(ctx context.Context, rc *redis.Client, key, elem string) (bool, error) {
			v, err := rc.HGet(ctx, key, elem).Result()
			if errors.Is(err, redis.Nil) {
				return false, nil
			}
			if err == nil && v != "v"+elem {
				return false, fmt.Errorf("HGET %s %s = %q", key, elem, v)
			}
			return err == nil, err
		}},
	{"set",
		func(ctx context.Context, rc *redis.Client, key string, elems []string) error {
			return rc.SAdd(ctx, key, toAny(elems)...).Err()
		},
		func(ctx context.Context, rc *redis.Client, key, elem string) (bool, error) {
			return rc.SIsMember(ctx, key, elem).Result()
		}},
	{"list",
		func(ctx context.Context, rc *redis.Client, key string, elems []string) error {
			return rc.RPush(ctx, key, toAny(elems)...).Err()
		},
		func(ctx context.Context, rc *redis.Client, key, elem string) (bool, error) {
			_, err := rc.LPos(ctx, key, elem, redis.LPosArgs{}).Result()
			if errors.Is(err, redis.Nil) {
				return false, nil
			}
			return err == nil, err
		}},
	// A sorted set member has two entries (member→score and the score
	// index); ZRANK fails unless the index entry is there too.
	{"zset",
		func(ctx context.Context, rc *redis.Client, key string, elems []string) error {
			zs := make([]redis.Z, len(elems))
			for i, e := range elems {
				zs[i] = redis.Z{Score: 1.5, Member: e}
			}
			return rc.ZAdd(ctx, key, zs...).Err()
		},
		func(ctx context.Context, rc *redis.Client, key, elem string) (bool, error) {
			score, err := rc.ZScore(ctx, key, elem).Result()
			if errors.Is(err, redis.Nil) {
				return false, nil
			}
			if err == nil && score != 1.5 {
				return false, fmt.Errorf("ZSCORE %s %s = %g", key, elem, score)
			}
			if err == nil {
				err = rc.ZRank(ctx, key, elem).Err()
			}
			return err == nil, err
		}},
	// A script writes each element with two commands on two keys (a set
	// member and a string of its own); its writes are one batch, so the
	// kill leaves both or neither of every element, and all of the
	// script or none of it.
	{"script",
		func(ctx context.Context, rc *redis.Client, key string, elems []string) error {
			return killScript.Run(ctx, rc, []string{key}, toAny(elems)...).Err()
		},
		func(ctx context.Context, rc *redis.Client, key, elem string) (bool, error) {
			member, err := rc.SIsMember(ctx, key, elem).Result()
			if err != nil {
				return false, err
			}
			v, err := rc.Get(ctx, key+":"+elem).Result()
			if errors.Is(err, redis.Nil) {
				v, err = "", nil
			}
			if err == nil && member != (v == elem) {
				return false, fmt.Errorf("%s: member %v but its string is %q: the script was half applied", key, member, v)
			}
			return member, err
		}},
	// Three SETBITs in a transaction, 97 bytes apart past 128 KiB: the
	// bitmap is a fragmented string (server/fragstring.go) from the
	// first command on, with tens of bits in a fragment, stored as runs.
	{"bitmap",
		func(ctx context.Context, rc *redis.Client, key string, elems []string) error {
			_, err := rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
				for _, e := range elems {
					p.SetBit(ctx, key, killBit(e), 1)
				}
				return nil
			})
			return err
		},
		func(ctx context.Context, rc *redis.Client, key, elem string) (bool, error) {
			bit, err := rc.GetBit(ctx, key, killBit(elem)).Result()
			return bit == 1, err
		}},
	{"hll",
		func(ctx context.Context, rc *redis.Client, key string, elems []string) error {
			return rc.PFAdd(ctx, key, toAny(elems)...).Err()
		},
		func(ctx context.Context, rc *redis.Client, key, elem string) (bool, error) {
			v, err := rc.Get(ctx, key).Bytes()
			if errors.Is(err, redis.Nil) {
				return false, nil
			}
			if err == nil {
				err = hll.Check(v)
			}
			return err == nil && !hll.WouldChange(v, [][]byte{[]byte(elem)}), err
		}},
}

// killBit is the bit the bitmap type sets for elem ("a17" …): distinct
// for each element, 97 bytes apart.
func killBit(elem string) int64 {
	n, _ := strconv.Atoi(elem[1:])
	return (128<<10 + int64(3*n+int(elem[0]-'a'))*97) * 8
}

var killScript = redis.NewScript(`for _, e in ipairs(ARGV) do
  redis.call('sadd', KEYS[1], e)
  redis.call('set', KEYS[1] .. ':' .. e, e)
end
return #ARGV`)

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// TestKill9EveryType kills the server with SIGKILL while clients add
// elements to collections of every type, three elements per command, then
// restarts it: every acknowledged command's elements are there, and a
// command cut short by the kill left all of its elements or none.
func TestKill9EveryType(t *testing.T) {
	for _, mode := range []string{"always", "no"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"--dir", dir, "--addr", "127.0.0.1:0", "--http", "", "--appendfsync", mode, "--loglevel", "warning"}
			srv := startChild(t, args...)

			// sent[w][ti] counts the commands writer w sent for type ti;
			// acked[w][ti] those acknowledged, a prefix of them.
			const writers = 4
			sent := make([][]int, writers)
			acked := make([][]int, writers)
			var total atomic.Int64
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for w := range writers {
				sent[w], acked[w] = make([]int, len(killTypes)), make([]int, len(killTypes))
				rc := srv.client(t)
				wg.Go(func() {
					ctx := context.Background()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						ti := i % len(killTypes)
						n := sent[w][ti]
						sent[w][ti]++
						key := fmt.Sprintf("w%d:%s", w, killTypes[ti].name)
						if killTypes[ti].write(ctx, rc, key, killElems(n)) != nil {
							return
						}
						acked[w][ti]++
						total.Add(1)
					}
				})
			}
			srv.killAfter(t, &total, 400)
			close(stop)
			wg.Wait()

			rc := startChild(t, args...).client(t)
			ctx := context.Background()
			checked := 0
			for w := range writers {
				for ti, kt := range killTypes {
					key := fmt.Sprintf("w%d:%s", w, kt.name)
					for n := range sent[w][ti] {
						present := 0
						elems := killElems(n)
						for _, e := range elems {
							ok, err := kt.has(ctx, rc, key, e)
							if err != nil {
								t.Fatalf("%s after restart: %v", key, err)
							}
							if ok {
								present++
							}
						}
						switch {
						case n < acked[w][ti] && present != len(elems):
							t.Fatalf("%s: acknowledged command %d lost %d of its %d elements after kill -9", key, n, len(elems)-present, len(elems))
						case present != 0 && present != len(elems) && !lossyKillTypes[kt.name]:
							t.Fatalf("%s: command %d, cut by the kill, left %d of its %d elements", key, n, present, len(elems))
						}
						checked++
					}
				}
			}
			if checked == 0 {
				t.Fatal("nothing was acknowledged before the kill")
			}
			t.Logf("appendfsync %s: %d commands over %d types checked after kill -9", mode, checked, len(killTypes))
		})
	}
}

// killElems names the three elements of a writer's command n.
func killElems(n int) []string {
	return []string{fmt.Sprintf("a%d", n), fmt.Sprintf("b%d", n), fmt.Sprintf("c%d", n)}
}
