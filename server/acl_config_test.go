package server

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
)

// TestConfigUsersRedisDiff starts lsmgo with a config file's user list
// and redis-server with the same user directives (and the same
// requirepass, which the default user's directive replaces), then sends
// both the same commands as those users: the replies must match.
func TestConfigUsersRedisDiff(t *testing.T) {
	users := []string{
		"alice on >apw ~app:* &app:* +@all",
		"default on >dpw ~* &* +@all",
		"carol off >cpw ~* &* +@all",
	}
	redisArgs := []string{"--requirepass", "old"}
	for _, u := range users {
		redisArgs = append(redisArgs, "--user")
		redisArgs = append(redisArgs, strings.Fields(u)...)
	}
	sock := testutil.StartRedisWith(t, redisArgs...)
	file := filepath.Join(t.TempDir(), "lsmgo.toml")
	writeFile(t, file, "requirepass = \"old\"\nuser = [\n  \""+strings.Join(users, "\",\n  \"")+"\",\n]\n")
	s := startServer(t, func(c *Config) { c.ConfigFile = file })
	ours, theirs := dialDiff(t, "tcp", s.Addr().String(), 2), dialDiff(t, "unix", sock, 2)
	for _, cmd := range []string{
		"PING", "AUTH old", "AUTH default old", "AUTH dpw", "ACL USERS", "ACL LIST", "ACL WHOAMI",
		"ACL SAVE", "ACL LOAD", "CONFIG GET user", "AUTH carol cpw",
		"AUTH alice apw", "ACL WHOAMI", "SET app:1 v", "GET app:1", "SET other v", "PUBLISH other m",
	} {
		args := strings.Fields(cmd)
		ours.send(args)
		theirs.send(args)
		a, err := ours.flushRead(1)
		if err != nil {
			t.Fatalf("%s: lsmgo: %v", cmd, err)
		}
		b, err := theirs.flushRead(1)
		if err != nil {
			t.Fatalf("%s: redis-server: %v", cmd, err)
		}
		got, want := render(a[0], exact), render(b[0], exact)
		if strings.HasPrefix(got, "-NOPERM") && strings.HasPrefix(want, "-NOPERM") {
			// Redis 7.0 words key and channel refusals otherwise than
			// 7.2, whose words lsmgo answers (doc/server.md).
			got, want = strings.Fields(got)[0], strings.Fields(want)[0]
		}
		if got != want {
			t.Errorf("%s:\n lsmgo: %q\n redis: %q", cmd, got, want)
		}
	}
}

// TestConfigUserErrors: a bad user list stops the start with the file and
// line of the entry at fault, where redis-server refuses the same
// directives in its config file for the same reason.
func TestConfigUserErrors(t *testing.T) {
	dir := t.TempDir()
	aclFile := filepath.Join(dir, "users.acl")
	writeFile(t, aclFile, "")
	redisBin, _ := exec.LookPath("redis-server")
	for _, tc := range []struct {
		toml, want  string
		conf, redis string // the same in redis.conf, and Redis' reason; "" when Redis has no equivalent
	}{
		{"maxclients = 5\nuser = [\n  \"alice on >a ~* +@all\",\n  'alice on >b',\n]\n",
			`c.toml:4: user "alice on >b": Error in user declaration 'alice': Duplicate user found. A user can only be defined once in config files`,
			"user alice on >a ~* +@all\nuser alice on >b\n", "Duplicate user found"},
		{"user = \"bob on >pw foo\"\n", `c.toml:1: user "bob on >pw foo": Error in user declaration 'foo': Syntax error`,
			"user bob on >pw foo\n", "Syntax error"},
		{"user = [\"ok on\", \"bob on +nosuch\"]\n", `c.toml:1: user "bob on +nosuch": Error in user declaration '+nosuch': Unknown command or category name in ACL`,
			"user ok on\nuser bob on +nosuch\n", "Unknown command or category name in ACL"},
		{"aclfile = \"" + aclFile + "\"\nuser = [\"alice on\"]\n", "at the same setting an ACL file path is invalid",
			"aclfile " + aclFile + "\nuser alice on\n", "at the same setting an ACL file path is invalid"},
		{"user = [\"alice on\", 5]\n", "user: want a list of strings", "", ""},
		{"user = 5\n", "user: want a string or a list of strings", "", ""},
	} {
		file := filepath.Join(dir, "c.toml")
		writeFile(t, file, tc.toml)
		cfg := DefaultConfig()
		cfg.ConfigFile = file
		if _, err := cfg.resolve(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.toml, err, tc.want)
		}
		if tc.conf == "" || redisBin == "" {
			continue
		}
		conf := filepath.Join(dir, "redis.conf")
		writeFile(t, conf, "port 0\nunixsocket "+filepath.Join(dir, "r.sock")+"\nsave \"\"\ndir "+dir+"\n"+tc.conf)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, redisBin, conf).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), tc.redis) {
			t.Errorf("redis-server with %q: %v, output lacks %q:\n%s", tc.conf, err, tc.redis, out)
		}
	}
}

// TestConfigRewriteUsers: without an aclfile, CONFIG REWRITE writes the
// running users in place of the file's list, which a restart reads back;
// a file without a list gains one only once the users differ from a
// fresh start's; with an aclfile the users are left to ACL SAVE.
func TestConfigRewriteUsers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "lsmgo.toml")
	writeFile(t, file, "maxclients = 100\nuser = [\n  \"alice on >a ~* +@all\", # the admin\n]\nslowlog-max-len = 5 # kept\n")
	s := startServer(t, func(c *Config) { c.ConfigFile = file })
	c := dialRaw(t, s)
	eq(t, "setuser", aclDo(c, "ACL SETUSER bob on >b ~b:* +get"), "+OK")
	eq(t, "deluser", aclDo(c, "ACL DELUSER alice"), ":1")
	eq(t, "rewrite", aclDo(c, "CONFIG REWRITE"), "+OK")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rewritten:\n%s", data)
	var got struct{ User []string }
	if _, err := toml.Decode(string(data), &got); err != nil {
		t.Fatal(err)
	}
	eq(t, "users written", strings.Join(got.User, "\n"), strings.Join(s.acl.userDirectives(), "\n"))
	for _, kept := range []string{"maxclients = 100\n", "slowlog-max-len = 5 # kept\n"} {
		if !strings.Contains(string(data), kept) {
			t.Errorf("rewrite lost %q", kept)
		}
	}
	eq(t, "second rewrite", aclDo(c, "CONFIG REWRITE"), "+OK")
	again, _ := os.ReadFile(file)
	eq(t, "second rewrite changes nothing", string(again), string(data))

	s2 := startServer(t, func(c *Config) { c.ConfigFile = file })
	d := dialRaw(t, s2)
	eq(t, "bob after restart", aclDo(d, "AUTH bob b"), "+OK")
	eq(t, "bob's rules", aclDo(d, "GET b:1"), "$-1")
	eq(t, "alice gone", aclDo(d, "AUTH alice a"), "-WRONGPASS invalid username-password pair or user is disabled.")
	// As in Redis, the default user's directive resets it first, which
	// adds sanitize-payload (reported only; lsmgo checks every payload).
	eq(t, "same users", strings.Join(s2.acl.userDirectives(), "\n"),
		strings.Replace(strings.Join(got.User, "\n"), "default on nopass", "default on nopass sanitize-payload", 1))

	for _, aclfile := range []bool{false, true} {
		file := filepath.Join(t.TempDir(), "plain.toml")
		writeFile(t, file, "maxclients = 100\n")
		s := startServer(t, func(c *Config) {
			c.ConfigFile = file
			if aclfile {
				c.ACLFile = filepath.Join(filepath.Dir(file), "users.acl")
				writeFile(t, c.ACLFile, "")
			}
		})
		c := dialRaw(t, s)
		eq(t, "rewrite", aclDo(c, "CONFIG REWRITE"), "+OK")
		data, _ := os.ReadFile(file)
		eq(t, "fresh users not written", string(data), "maxclients = 100\n")
		eq(t, "setuser", aclDo(c, "ACL SETUSER bob on"), "+OK")
		eq(t, "rewrite", aclDo(c, "CONFIG REWRITE"), "+OK")
		var got struct{ User []string }
		if _, err := toml.DecodeFile(file, &got); err != nil {
			t.Fatal(err)
		}
		want := s.acl.userDirectives()
		if aclfile {
			want = nil
		}
		if !slices.Equal(got.User, want) {
			t.Errorf("aclfile %v: users written %q, want %q", aclfile, got.User, want)
		}
	}
}
