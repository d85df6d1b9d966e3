package server

import (
	"context"
	"strings"
	"testing"
)

// TestReplicationMasterAuth follows a primary that requires a password:
// without masterauth the link is refused; with a user whose ACL lacks
// LSMSYNC it is refused by the primary's ACL; with masteruser and
// masterauth of a user allowed LSMSYNC it follows.
func TestReplicationMasterAuth(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t, func(c *Config) { c.RequirePass = "secret" })
	pc := newClient(t, primary, 2, nil)
	if _, msg := do(ctx, pc, "auth", "secret"); msg != "" {
		t.Fatal(msg)
	}
	for _, rule := range [][]any{
		{"acl", "setuser", "repl", "on", ">rpass", "+lsmsync"},
		{"acl", "setuser", "reader", "on", ">rdpass", "+get"},
	} {
		if _, msg := do(ctx, pc, rule...); msg != "" {
			t.Fatal(msg)
		}
	}
	randomReplWrites(t, ctx, pc, 30, 50)

	replica := startServer(t, nil)
	rc := newClient(t, replica, 2, nil)
	refusedWith := func(what string) {
		t.Helper()
		waitFor(t, "a refusal with "+what, func() bool {
			why := replica.repl.linkErr.Load()
			return why != nil && strings.Contains(*why, what)
		})
		if replica.repl.linkUp.Load() {
			t.Fatal("the link is up")
		}
	}
	host, port, _ := strings.Cut(primary.Addr().String(), ":")
	if _, msg := do(ctx, rc, "replicaof", host, port); msg != "" {
		t.Fatal(msg)
	}
	refusedWith("NOAUTH")
	for _, set := range [][]any{
		{"config", "set", "masteruser", "reader", "masterauth", "rdpass"},
	} {
		if _, msg := do(ctx, rc, set...); msg != "" {
			t.Fatal(msg)
		}
	}
	refusedWith("NOPERM")
	if _, msg := do(ctx, rc, "config", "set", "masteruser", "repl", "masterauth", "rpass"); msg != "" {
		t.Fatal(msg)
	}
	v, _ := do(ctx, rc, "config", "get", "masterauth")
	if strings.Contains(strings.Join(anyStrings(v), " "), "rpass") {
		t.Fatalf("CONFIG GET masterauth shows the password: %v", v)
	}
	waitFor(t, "the replica to catch up", func() bool {
		return replica.repl.linkUp.Load() && lastSeq(replica) == lastSeq(primary)
	})
	// An error (LOADING, a connection the swap closed) must not pass
	// for an empty reply: DBSIZE 0 was once go-redis' value of one.
	for _, k := range []string{"s:k1", "s:k2", "n:k3"} {
		want, wmsg := do(ctx, pc, "get", k)
		got, gmsg := do(ctx, rc, "get", k)
		if wmsg != "" || gmsg != "" {
			t.Fatalf("GET %s: %s on the primary, %s on the replica", k, wmsg, gmsg)
		}
		eq(t, "GET "+k+" on the replica", got, want)
	}
	want, err := pc.DBSize(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	got, err := rc.DBSize(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "DBSIZE on the replica", got, want)
}

func anyStrings(v any) []string {
	var out []string
	if list, ok := v.([]any); ok {
		for _, e := range list {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}
