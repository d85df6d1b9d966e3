package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// pipeWrite is one command of the pipelines TestKill9PipelinedWrites
// sends: send queues the command that writes the two elements of round n
// of writer w; has reports whether each is there after the restart.
type pipeWrite struct {
	name string
	send func(ctx context.Context, p redis.Pipeliner, w, n int) redis.Cmder
	has  func(ctx context.Context, rc *redis.Client, w, n int) (int, error)
}

func pipeElem(w, n int, e string) string { return fmt.Sprintf("w%d:%d%s", w, n, e) }

// count turns the presence answers of a round's two elements into how
// many are there.
func count(a, b bool, err error) (int, error) {
	n := 0
	for _, ok := range []bool{a, b} {
		if ok {
			n++
		}
	}
	return n, err
}

var pipeWrites = []pipeWrite{
	{"hset", func(ctx context.Context, p redis.Pipeliner, w, n int) redis.Cmder {
		return p.HSet(ctx, fmt.Sprintf("h%d", w), pipeElem(w, n, "a"), "v", pipeElem(w, n, "b"), "v")
	}, func(ctx context.Context, rc *redis.Client, w, n int) (int, error) {
		a, err := rc.HExists(ctx, fmt.Sprintf("h%d", w), pipeElem(w, n, "a")).Result()
		if err != nil {
			return 0, err
		}
		b, err := rc.HExists(ctx, fmt.Sprintf("h%d", w), pipeElem(w, n, "b")).Result()
		return count(a, b, err)
	}},
	{"sadd", func(ctx context.Context, p redis.Pipeliner, w, n int) redis.Cmder {
		return p.SAdd(ctx, fmt.Sprintf("s%d", w), pipeElem(w, n, "a"), pipeElem(w, n, "b"))
	}, func(ctx context.Context, rc *redis.Client, w, n int) (int, error) {
		r, err := rc.SMIsMember(ctx, fmt.Sprintf("s%d", w), pipeElem(w, n, "a"), pipeElem(w, n, "b")).Result()
		if err != nil {
			return 0, err
		}
		return count(r[0], r[1], nil)
	}},
	{"rpush", func(ctx context.Context, p redis.Pipeliner, w, n int) redis.Cmder {
		return p.RPush(ctx, fmt.Sprintf("l%d", w), pipeElem(w, n, "a"), pipeElem(w, n, "b"))
	}, func(ctx context.Context, rc *redis.Client, w, n int) (int, error) {
		var found [2]bool
		for i, e := range []string{"a", "b"} {
			_, err := rc.LPos(ctx, fmt.Sprintf("l%d", w), pipeElem(w, n, e), redis.LPosArgs{}).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return 0, err
			}
			found[i] = err == nil
		}
		return count(found[0], found[1], nil)
	}},
	{"zadd", func(ctx context.Context, p redis.Pipeliner, w, n int) redis.Cmder {
		return p.ZAdd(ctx, fmt.Sprintf("z%d", w), redis.Z{Score: float64(n), Member: pipeElem(w, n, "a")}, redis.Z{Score: float64(n), Member: pipeElem(w, n, "b")})
	}, func(ctx context.Context, rc *redis.Client, w, n int) (int, error) {
		var found [2]bool
		for i, e := range []string{"a", "b"} {
			// ZRANK needs the score index entry as well as the member's.
			_, err := rc.ZRank(ctx, fmt.Sprintf("z%d", w), pipeElem(w, n, e)).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return 0, err
			}
			found[i] = err == nil
		}
		return count(found[0], found[1], nil)
	}},
	{"mset", func(ctx context.Context, p redis.Pipeliner, w, n int) redis.Cmder {
		return p.MSet(ctx, pipeElem(w, n, "a"), "x", pipeElem(w, n, "b"), "x")
	}, func(ctx context.Context, rc *redis.Client, w, n int) (int, error) {
		k, err := rc.Exists(ctx, pipeElem(w, n, "a"), pipeElem(w, n, "b")).Result()
		return int(k), err
	}},
}

// TestKill9PipelinedWrites kills the server with SIGKILL while clients
// send pipelines of writes to every collection type and to strings, each
// command adding two elements, plus an INCR of a counter per pipeline;
// the connection commits a pipeline's writes as one batch (pipeline.go).
// After a restart every command whose reply arrived is there whole, a
// command without a reply left both of its elements or neither, and each
// counter lies between its acknowledged and its sent INCRs.
func TestKill9PipelinedWrites(t *testing.T) {
	for _, mode := range []string{"everysec", "always"} {
		t.Run(mode, func(t *testing.T) {
			srv, args := startFresh(t, mode)
			const writers = 4
			// acked[w][n][c] is set when command c of writer w's
			// pipeline n was answered; sent[w] counts the pipelines sent,
			// incrs[w] the INCRs answered.
			acked := make([][][]bool, writers)
			sent := make([]int, writers)
			incrs := make([]int64, writers)
			srv.killMidWrites(t, writers, 300, func(w int) func() (int64, error) {
				rc := srv.client(t)
				ctx := context.Background()
				return func() (int64, error) {
					n := sent[w] // this pipeline's number
					p := rc.Pipeline()
					cmds := make([]redis.Cmder, len(pipeWrites))
					for c, pw := range pipeWrites {
						cmds[c] = pw.send(ctx, p, w, n)
					}
					incr := p.Incr(ctx, fmt.Sprintf("n%d", w))
					sent[w]++
					_, err := p.Exec(ctx)
					got := make([]bool, len(cmds))
					for c, cmd := range cmds {
						got[c] = cmd.Err() == nil
					}
					acked[w] = append(acked[w], got)
					if incr.Err() == nil {
						incrs[w]++
					}
					if err != nil {
						return 0, err
					}
					return 1, nil
				}
			})

			rc := startChild(t, args...).client(t)
			ctx := context.Background()
			checked := 0
			for w := range writers {
				for n := range sent[w] {
					for c, pw := range pipeWrites {
						present, err := pw.has(ctx, rc, w, n)
						if err != nil {
							t.Fatalf("%s of writer %d, pipeline %d, after restart: %v", pw.name, w, n, err)
						}
						switch {
						case acked[w][n][c] && present != 2:
							t.Fatalf("%s of writer %d, pipeline %d: acknowledged, but %d of its 2 elements are there after kill -9", pw.name, w, n, present)
						case present == 1:
							t.Fatalf("%s of writer %d, pipeline %d: cut by the kill, it left 1 of its 2 elements", pw.name, w, n)
						}
						checked++
					}
				}
				v, err := rc.Get(ctx, fmt.Sprintf("n%d", w)).Result()
				if errors.Is(err, redis.Nil) {
					v, err = "0", nil
				}
				if err != nil {
					t.Fatal(err)
				}
				if got, _ := strconv.ParseInt(v, 10, 64); got < incrs[w] || got > int64(sent[w]) {
					t.Fatalf("counter of writer %d is %s after kill -9: %d INCRs were acknowledged, %d sent", w, v, incrs[w], sent[w])
				}
			}
			if checked == 0 {
				t.Fatal("nothing was sent before the kill")
			}
			t.Logf("appendfsync %s: %d pipelined commands checked after kill -9", mode, checked)
		})
	}
}
