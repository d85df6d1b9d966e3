package server

import (
	"context"
	"testing"
)

// TestIncrByFloatAsRedis runs INCRBYFLOAT and HINCRBYFLOAT sequences from
// issue 24 and from Redis' own unit tests (tests/unit/type/incr.tcl) and
// compares each reply and the stored value with what redis-server 7.0.15
// on x86-64 answered; TestRedisDiff's float group compares random ones.
func TestIncrByFloatAsRedis(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	c := newClient(t, s, 2, nil)
	for _, tc := range []struct {
		stored string // "" for no key
		incrs  []string
		want   []string
	}{
		{"", []string{"0.1", "0.2"}, []string{"0.1", "0.3"}},
		{"0.1", []string{"0.1", "0.1", "-0.3"}, []string{"0.2", "0.3", "0"}},
		{"1.1", []string{"2.2"}, []string{"3.3"}},
		{"", []string{"10.5e20"}, []string{"1050000000000000000000"}},
		{"", []string{"1", "0.25"}, []string{"1", "1.25"}},
		{"1.5", []string{"1.5"}, []string{"3"}},
		{"17179869184", []string{"1.5"}, []string{"17179869185.5"}},
		{"17179869184", []string{"17179869184"}, []string{"34359738368"}},
		{"1", []string{"-1.1"}, []string{"-0.1"}},
		{"", []string{"0.024390243902439025", "-0.024390243902439025"}, []string{"0.02439024390243902", "0"}},
		{"1.5e3", []string{"0", "0.1"}, []string{"1500", "1500.09999999999999998"}},
		{"12.7", []string{"0.0462"}, []string{"12.7462"}},
	} {
		c.Del(ctx, "k", "h")
		if tc.stored != "" {
			c.Set(ctx, "k", tc.stored, 0)
			c.HSet(ctx, "h", "f", tc.stored)
		}
		for i, incr := range tc.incrs {
			got, err := c.Do(ctx, "INCRBYFLOAT", "k", incr).Text()
			if err != nil || got != tc.want[i] {
				t.Errorf("%q then INCRBYFLOAT %v: %q, %v; want %q", tc.stored, tc.incrs[:i+1], got, err, tc.want[i])
			}
			got, err = c.Do(ctx, "HINCRBYFLOAT", "h", "f", incr).Text()
			if err != nil || got != tc.want[i] {
				t.Errorf("%q then HINCRBYFLOAT %v: %q, %v; want %q", tc.stored, tc.incrs[:i+1], got, err, tc.want[i])
			}
		}
		last := tc.want[len(tc.want)-1]
		eq(t, "GET after INCRBYFLOAT", c.Get(ctx, "k").Val(), last)
		eq(t, "HGET after HINCRBYFLOAT", c.HGet(ctx, "h", "f").Val(), last)
	}
}
