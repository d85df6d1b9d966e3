package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestKill9Pops kills the server while pipelines of SPOP (a set big
// enough to pop with SPOP's memo of its descents) and of ZPOPMIN (from
// in-memory windows) drain their keys. After a restart every
// acknowledged pop is gone, at most the one unanswered pipeline's pops
// beyond them are, and the counts agree with the members: memos and
// windows are memory only, the pops are ordinary writes.
func TestKill9Pops(t *testing.T) {
	const size, depth = 6000, 16
	name := func(i int) string { return fmt.Sprintf("m:%05d", i) }
	for _, mode := range []string{"everysec", "always"} {
		t.Run(mode, func(t *testing.T) {
			srv, args := startFresh(t, mode)
			ctx := context.Background()
			rc := srv.client(t)
			for i := 0; i < size; i += 1000 {
				var ms []any
				var zs []redis.Z
				for j := i; j < i+1000; j++ {
					ms = append(ms, name(j))
					zs = append(zs, redis.Z{Score: float64(j), Member: name(j)})
				}
				if err := rc.SAdd(ctx, "s", ms...).Err(); err != nil {
					t.Fatal(err)
				}
				if err := rc.ZAdd(ctx, "z", zs...).Err(); err != nil {
					t.Fatal(err)
				}
			}
			// spopped holds the acknowledged SPOPs; zpopped counts the
			// acknowledged ZPOPMINs, which pop m:00000 onwards.
			spopped := map[string]bool{}
			zpopped := 0
			srv.killMidWrites(t, 2, 3000, func(w int) func() (int64, error) {
				c := srv.client(t)
				return func() (int64, error) {
					p := c.Pipeline()
					var sp []*redis.StringCmd
					var zp []*redis.ZSliceCmd
					for range depth {
						if w == 0 {
							sp = append(sp, p.SPop(ctx, "s"))
						} else {
							zp = append(zp, p.ZPopMin(ctx, "z"))
						}
					}
					_, err := p.Exec(ctx)
					acked := int64(0)
					for _, cmd := range sp {
						if cmd.Err() == nil {
							if spopped[cmd.Val()] {
								t.Errorf("SPOP returned %q twice", cmd.Val())
							}
							spopped[cmd.Val()] = true
							acked++
						}
					}
					for _, cmd := range zp {
						if cmd.Err() == nil && len(cmd.Val()) == 1 {
							if got := cmd.Val()[0].Member; got != name(zpopped) {
								t.Errorf("ZPOPMIN %d returned %v, want %s", zpopped, got, name(zpopped))
							}
							zpopped++
							acked++
						}
					}
					return acked, err
				}
			})
			if len(spopped) == 0 || zpopped == 0 {
				t.Fatalf("%d SPOPs and %d ZPOPMINs acknowledged before the kill", len(spopped), zpopped)
			}

			rc = startChild(t, args...).client(t)
			members, err := rc.SMembers(ctx, "s").Result()
			if err != nil {
				t.Fatal(err)
			}
			left := map[string]bool{}
			for _, m := range members {
				left[m] = true
			}
			for m := range spopped {
				if left[m] {
					t.Fatalf("SPOP of %s was acknowledged, but it is in the set after kill -9", m)
				}
			}
			if gone := size - len(left); gone < len(spopped) || gone > len(spopped)+depth {
				t.Fatalf("%d members gone from the set after kill -9; %d pops were acknowledged", gone, len(spopped))
			}
			if n := rc.SCard(ctx, "s").Val(); n != int64(len(left)) {
				t.Fatalf("SCARD = %d after kill -9, but the set has %d members", n, len(left))
			}
			zs, err := rc.ZRange(ctx, "z", 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			gone := size - len(zs)
			if gone < zpopped || gone > zpopped+depth {
				t.Fatalf("%d members gone from the sorted set after kill -9; %d pops were acknowledged", gone, zpopped)
			}
			for i, m := range zs {
				if m != name(gone+i) {
					t.Fatalf("sorted set after kill -9: member %d is %s, want %s", i, m, name(gone+i))
				}
			}
			if n := rc.ZCard(ctx, "z").Val(); n != int64(len(zs)) {
				t.Fatalf("ZCARD = %d after kill -9, but the sorted set has %d members", n, len(zs))
			}
			t.Logf("appendfsync %s: %d SPOPs and %d ZPOPMINs acknowledged before kill -9", mode, len(spopped), zpopped)
		})
	}
}
