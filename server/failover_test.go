package server

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestFailover runs FAILOVER TO a replica: the target promotes itself,
// the old primary follows it without a new copy, and the other replica,
// still following the old primary, gets the new primary's writes through
// it. FAILOVER's refusals are Redis'.
func TestFailover(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t, nil)
	pc := newClient(t, primary, 2, nil)
	randomReplWrites(t, ctx, pc, 31, 100)
	a, ac := startReplica(t, primary)
	b, _ := startReplica(t, primary)
	randomReplWrites(t, ctx, pc, 32, 100)

	host, port, _ := strings.Cut(a.Addr().String(), ":")
	for _, c := range []struct {
		client *redis.Client
		args   []any
		want   string
	}{
		{ac, []any{"failover"}, "ERR FAILOVER is not valid when server is a replica."},
		{pc, []any{"failover", "to", "127.0.0.1", "1"}, "ERR FAILOVER target HOST and PORT is not a replica."},
		{pc, []any{"failover", "force"}, "ERR FAILOVER with force option requires both a timeout and target HOST and IP."},
		{pc, []any{"failover", "timeout", "0"}, "ERR FAILOVER timeout must be greater than 0"},
		{pc, []any{"failover", "abort"}, "ERR No failover in progress."},
		{pc, []any{"failover", "to", host}, "ERR syntax error"},
	} {
		if _, msg := do(ctx, c.client, c.args...); msg != c.want {
			t.Errorf("%v: %q, want %q", c.args, msg, c.want)
		}
	}

	if _, msg := do(ctx, pc, "failover", "to", host, port, "timeout", 5000); msg != "" {
		t.Fatal(msg)
	}
	waitFor(t, "the old primary to follow the target", func() bool {
		v, _ := do(ctx, pc, "info", "replication")
		info, _ := v.(string) // nil while a full copy is swapped in (LOADING)
		return strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up") &&
			strings.Contains(info, "master_failover_state:no-failover")
	})
	role, _ := do(ctx, ac, "role")
	if role.([]any)[0] != "master" {
		t.Fatalf("ROLE on the target: %v", role)
	}
	if _, msg := do(ctx, pc, "set", "x", "1"); !strings.HasPrefix(msg, "READONLY") {
		t.Fatalf("a write on the old primary: %q", msg)
	}
	randomReplWrites(t, ctx, ac, 33, 200)
	waitReplicated(t, a, primary)
	waitReplicated(t, a, b)
}
