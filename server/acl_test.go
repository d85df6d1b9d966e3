package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/resp"
	"github.com/redis/go-redis/v9"
)

// TestACLGoRedisUsername drives the ACL through go-redis, which sends
// HELLO 3 AUTH user pass (RESP3) or AUTH user pass (RESP2) on connect:
// the user gets its commands and keys and nothing else.
func TestACLGoRedisUsername(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, nil)
	admin := newClient(t, s, 3, nil)
	if err := admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">s3cret", "~app:*", "%R~shared:*", "+@read", "+@write", "-flushall").Err(); err != nil {
		t.Fatal(err)
	}
	admin.Set(ctx, "shared:x", "1", 0)
	for _, proto := range []int{2, 3} {
		app := newClient(t, s, proto, func(o *redis.Options) { o.Username, o.Password = "app", "s3cret" })
		if err := app.Set(ctx, "app:k", "v", 0).Err(); err != nil {
			t.Fatalf("RESP%d SET app:k: %v", proto, err)
		}
		if v, err := app.Get(ctx, "shared:x").Result(); err != nil || v != "1" {
			t.Fatalf("RESP%d GET shared:x = %q, %v", proto, v, err)
		}
		if err := app.Set(ctx, "shared:x", "2", 0).Err(); err == nil || err.Error() != "NOPERM No permissions to access a key" {
			t.Fatalf("RESP%d SET shared:x: %v", proto, err)
		}
		if err := app.FlushAll(ctx).Err(); err == nil || err.Error() != "NOPERM User app has no permissions to run the 'flushall' command" {
			t.Fatalf("RESP%d FLUSHALL: %v", proto, err)
		}
		if who, err := app.Do(ctx, "ACL", "WHOAMI").Result(); err == nil || who != nil {
			t.Fatalf("RESP%d ACL WHOAMI (not allowed): %v %v", proto, who, err)
		}
		bad := newClient(t, s, proto, func(o *redis.Options) { o.Username, o.Password = "app", "wrong" })
		if err := bad.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
			t.Fatalf("RESP%d wrong password: %v", proto, err)
		}
	}
	entries, err := admin.Do(ctx, "ACL", "LOG").Slice()
	if err != nil || len(entries) == 0 {
		t.Fatalf("ACL LOG: %v %v", entries, err)
	}
	// INFO's acl_access_denied_* count what ACL LOG counts (its
	// entries' counts, by reason; nothing was trimmed).
	logged := map[string]int64{}
	for _, e := range entries {
		m := e.(map[any]any)
		logged[m["reason"].(string)] += m["count"].(int64)
	}
	if logged["key"] == 0 || logged["command"] == 0 || logged["auth"] == 0 {
		t.Fatalf("ACL LOG counts %v: want key, command and auth refusals", logged)
	}
	info := admin.Info(ctx, "stats").Val()
	for reason, field := range map[string]string{"auth": "auth", "command": "cmd", "key": "key", "channel": "channel"} {
		if want := fmt.Sprintf("acl_access_denied_%s:%d\r\n", field, logged[reason]); !strings.Contains(info, want) {
			t.Errorf("INFO stats lacks %q:\n%s", want, info)
		}
	}
}

// TestACLDelUserDisconnects: ACL DELUSER closes the user's connections;
// ACL SETUSER off only stops new authentications, as in Redis.
func TestACLDelUserDisconnects(t *testing.T) {
	s := startServer(t, nil)
	admin := dialRaw(t, s)
	eq(t, "setuser", aclDo(admin, "ACL SETUSER bob on >pw +@all ~*"), "+OK")
	bob := dialRaw(t, s)
	eq(t, "auth", aclDo(bob, "AUTH bob pw"), "+OK")
	eq(t, "off", aclDo(admin, "ACL SETUSER bob off"), "+OK")
	eq(t, "ping after off", aclDo(bob, "PING"), "+PONG")
	again := dialRaw(t, s)
	eq(t, "auth when off", aclDo(again, "AUTH bob pw"), "-WRONGPASS invalid username-password pair or user is disabled.")
	eq(t, "too many args", aclDo(admin, "ACL CAT a b"), "-ERR unknown subcommand or wrong number of arguments for 'cat'. Try ACL HELP.")
	reset := dialRaw(t, s)
	eq(t, "auth other", aclDo(reset, "AUTH bob pw"), "-WRONGPASS invalid username-password pair or user is disabled.")
	eq(t, "on again", aclDo(admin, "ACL SETUSER bob on"), "+OK")
	eq(t, "hello auth", aclDo(reset, "HELLO 2 AUTH bob pw")[:2], "*1")
	eq(t, "whoami", aclDo(reset, "ACL WHOAMI"), "$3\r\nbob")
	eq(t, "reset", aclDo(reset, "RESET"), "+RESET")
	eq(t, "whoami after reset", aclDo(reset, "ACL WHOAMI"), "$7\r\ndefault")
	eq(t, "deluser", aclDo(admin, "ACL DELUSER bob nobody"), ":1")
	bob.expectClosed("")
}

// TestACLRevokedSubscriberClosed: a subscriber whose user loses the
// channel it listens to is closed, as in Redis 7; one whose channels stay
// allowed is not.
func TestACLRevokedSubscriberClosed(t *testing.T) {
	s := startServer(t, nil)
	admin := dialRaw(t, s)
	eq(t, "setuser", aclDo(admin, "ACL SETUSER ps on nopass +@all ~* &news* &chat"), "+OK")
	news, chat := dialRaw(t, s), dialRaw(t, s)
	for _, c := range []*rawConn{news, chat} {
		eq(t, "auth", aclDo(c, "AUTH ps x"), "+OK")
	}
	eq(t, "subscribe news", aclDo(news, "SUBSCRIBE news.1"), "*3\r\n$9\r\nsubscribe\r\n$6\r\nnews.1\r\n:1")
	eq(t, "psubscribe chat", aclDo(chat, "PSUBSCRIBE chat"), "*3\r\n$10\r\npsubscribe\r\n$4\r\nchat\r\n:1")
	eq(t, "revoke news", aclDo(admin, "ACL SETUSER ps resetchannels &chat"), "+OK")
	news.expectClosed("")
	eq(t, "chat stays", aclDo(chat, "PING"), "*2\r\n$4\r\npong\r\n$0\r\n")
}

// TestACLRequirePass: requirepass is the default user's password, live,
// and AUTH with one argument authenticates as the default user.
func TestACLRequirePass(t *testing.T) {
	s := startServer(t, func(c *Config) { c.RequirePass = "pw" })
	c := dialRaw(t, s)
	eq(t, "unauthenticated", aclDo(c, "GET x"), "-NOAUTH Authentication required.")
	eq(t, "auth", aclDo(c, "AUTH pw"), "+OK")
	if got := aclDo(c, "ACL GETUSER default"); !strings.Contains(got, passwordHash([]byte("pw"))) {
		t.Fatalf("default user's passwords: %s", got)
	}
	eq(t, "clear requirepass", aclDo(c, `CONFIG SET requirepass ""`), "+OK")
	d := dialRaw(t, s)
	eq(t, "new connection is default", aclDo(d, "ACL WHOAMI"), "$7\r\ndefault")
}

// TestACLSaveLoad: users persist through ACL SAVE and the aclfile only;
// a restart reads them back; a bad file changes nothing.
func TestACLSaveLoad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(file, []byte("user default on nopass ~* &* +@all\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(c *Config) { c.ACLFile = file })
	c := dialRaw(t, s)
	eq(t, "setuser", aclDo(c, `ACL SETUSER alice on >a1 %R~r:* &news "(+get ~x)"`), "+OK")
	eq(t, "save", aclDo(c, "ACL SAVE"), "+OK")
	data, _ := os.ReadFile(file)
	want := "user alice on #" + passwordHash([]byte("a1")) + " %R~r:* resetchannels &news -@all (~x resetchannels -@all +get)\nuser default on nopass ~* &* +@all\n"
	eq(t, "file", string(data), want)
	eq(t, "deluser", aclDo(c, "ACL DELUSER alice"), ":1")
	eq(t, "load", aclDo(c, "ACL LOAD"), "+OK")
	if got := aclDo(c, "ACL LIST"); !strings.Contains(got, "user alice on #") {
		t.Fatalf("after LOAD: %s", got)
	}
	if err := os.WriteFile(file, []byte("user bob on +nosuch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := aclDo(c, "ACL LOAD"); !strings.HasPrefix(got, "-ERR "+file+":1: Error in applying operation '+nosuch'") {
		t.Fatalf("bad file: %s", got)
	}
	if got := aclDo(c, "ACL USERS"); !strings.Contains(got, "alice") || strings.Contains(got, "bob") {
		t.Fatalf("users after a failed LOAD: %s", got)
	}
}

// TestACLScriptsAndMulti: redis.call runs as the caller's user; a rule
// changed between MULTI's queueing and EXEC refuses the command then.
func TestACLScriptsAndMulti(t *testing.T) {
	s := startServer(t, nil)
	admin := dialRaw(t, s)
	eq(t, "setuser", aclDo(admin, "ACL SETUSER sc on nopass ~k* +eval +get +multi +exec +set +sort"), "+OK")
	c := dialRaw(t, s)
	eq(t, "auth", aclDo(c, "AUTH sc any"), "+OK")
	eq(t, "script incr", aclDo(c, `EVAL "return redis.pcall('incr', KEYS[1])" 1 k1`), "-NOPERM User sc has no permissions to run the 'incr' command")
	eq(t, "script key", aclDo(c, `EVAL "return redis.pcall('get', 'other')" 0`), "-NOPERM No permissions to access a key")
	eq(t, "acl_check_cmd", aclDo(c, `EVAL "return {redis.acl_check_cmd('get', 'k1'), redis.acl_check_cmd('get', 'x'), redis.acl_check_cmd('incr', 'k1')}" 0`), "*3\r\n:1\r\n$-1\r\n$-1")
	eq(t, "sort by", aclDo(c, "SORT k1 BY w_*"), "-ERR BY option of SORT denied due to insufficient ACL permissions.")
	eq(t, "sort get", aclDo(c, "SORT k1 GET #"), "-ERR GET option of SORT denied due to insufficient ACL permissions.")
	eq(t, "sort plain", aclDo(c, "SORT k1"), "*0")
	eq(t, "multi", aclDo(c, "MULTI"), "+OK")
	eq(t, "queued", aclDo(c, "SET k1 v"), "+QUEUED")
	eq(t, "revoke", aclDo(admin, "ACL SETUSER sc -set"), "+OK")
	eq(t, "exec", aclDo(c, "EXEC"), "*1\r\n-NOPERM ACLs rules changed between the moment the transaction was accumulated and its execution. This command is no longer allowed for the following reason: no permission to execute the command or subcommand")
	if got := aclDo(admin, "ACL LOG 1"); !strings.Contains(got, "multi") {
		t.Fatalf("ACL LOG after EXEC: %s", got)
	}
}

// aclDo sends one command, split at spaces (a double-quoted part is one
// argument), and returns its reply without the final CRLF.
func aclDo(r *rawConn, line string) string {
	r.t.Helper()
	var args [][]byte
	for i, part := range strings.Split(line, `"`) {
		if i%2 == 1 {
			args = append(args, []byte(part))
			continue
		}
		for _, f := range strings.Fields(part) {
			args = append(args, []byte(f))
		}
	}
	r.send(string(resp.AppendCommand(nil, args...)))
	return strings.TrimSuffix(r.reply(), "\r\n")
}

// BenchmarkACLCheck measures the permission check on the command path:
// for the default user (allowed everything: a flag test) and for a user
// with key patterns and selectors (the full check). Both allocate
// nothing.
func BenchmarkACLCheck(b *testing.B) {
	set := lookupFullName("set")
	args := [][]byte{[]byte("set"), []byte("app:42"), []byte("v")}
	restricted := newUserPerms(false)
	for _, r := range []string{"on", "+@read", "+@write", "%R~shared:*", "~app:*", "(+get ~other:*)"} {
		if err := restricted.apply(r, false); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name string
		p    *aclPerms
	}{{"default", defaultPerms()}, {"restricted", restricted.seal()}} {
		b.Run(bc.name, func(b *testing.B) {
			var keys []keyRef
			b.ReportAllocs()
			for b.Loop() {
				if bc.p.unrestricted {
					continue
				}
				var d aclDenial
				if d, _, keys = bc.p.check(set, args, keys); d != aclAllowed {
					b.Fatal("refused")
				}
			}
		})
	}
}
