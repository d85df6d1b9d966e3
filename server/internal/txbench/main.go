// Command txbench measures one read-modify-write (GET, SET, EXPIRE of a
// random key out of -keys, 1000 by default; -keys 1 makes every call hit
// one hot key) done two ways from c concurrent clients: as
// EVALSHA of a script and as MULTI/EXEC, so that a script's overhead over
// a transaction can be read off. It prints requests per second and the
// 99th percentile latency of each.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

const body = "local v = redis.call('get', KEYS[1]) redis.call('set', KEYS[1], (tonumber(v) or 0) + 1) return redis.call('expire', KEYS[1], 3600)"

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	n := flag.Int("n", 20000, "operations per mode")
	c := flag.Int("c", 50, "concurrent clients")
	keys := flag.Int("keys", 1000, "distinct keys the calls pick from")
	flag.Parse()
	rc := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: *c, Protocol: 2})
	defer rc.Close()
	ctx := context.Background()
	script := redis.NewScript(body)
	if err := script.Load(ctx, rc).Err(); err != nil {
		panic(err)
	}
	modes := []struct {
		name string
		op   func(key string) error
	}{
		{"evalsha", func(key string) error { return script.EvalSha(ctx, rc, []string{key}).Err() }},
		{"multi/exec", func(key string) error {
			_, err := rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Get(ctx, key)
				p.Set(ctx, key, "1", 0)
				p.Expire(ctx, key, time.Hour)
				return nil
			})
			if err == redis.Nil {
				err = nil
			}
			return err
		}},
	}
	for _, m := range modes {
		lat := make([][]time.Duration, *c)
		start := time.Now()
		var wg sync.WaitGroup
		for w := range *c {
			wg.Go(func() {
				for range *n / *c {
					key := "key:" + strconv.Itoa(rand.IntN(*keys))
					t := time.Now()
					if err := m.op(key); err != nil {
						panic(err)
					}
					lat[w] = append(lat[w], time.Since(t))
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		all := slices.Concat(lat...)
		slices.Sort(all)
		fmt.Printf("%s: %.0f requests per second, p99=%.3f msec\n", m.name,
			float64(len(all))/elapsed.Seconds(), float64(all[len(all)*99/100].Microseconds())/1000)
	}
}
