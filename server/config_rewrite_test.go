package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigRewrite changes settings of every kind with CONFIG SET, then
// CONFIG REWRITE: the file resolves to the running settings, keeps its
// comments, order and unchanged lines, and a second rewrite changes nothing.
func TestConfigRewrite(t *testing.T) {
	file := filepath.Join(t.TempDir(), "lsmgo.toml")
	original := "# lsmgo test config\n" +
		"maxclients = 2000  # clients # and more\n" +
		"\n" +
		"# the slow log\n" +
		"slowlog-max-len = 5\n" +
		"timeout = \"\"\"\n1m\"\"\"\n" +
		"admin-token = 'old#token' # secret\n" +
		"busy-reply-threshold = 7000\n"
	writeFile(t, file, original)
	s := startServer(t, func(c *Config) { c.ConfigFile = file })
	c := newClient(t, s, 3, nil)
	ctx := context.Background()
	set := []string{
		"maxclients", "3000", // an integer, with a trailing comment
		"proto-max-bulk-len", "64mb", // a size, appended
		"timeout", "90", // a duration, on a multi-line string
		"slowlog-log-slower-than", "1500ms", // a duration not in whole units
		"client-output-buffer-limit", "pubsub 1mb 512kb 30", // a list
		"save", "3600 1 300 100", // a list of the no-effect kind
		"lua-time-limit", "9000", // the alias of a line in the file
		"notify-keyspace-events", "KEx",
		"admin-token", `p"a\ss 'w#rd`, // a secret with quotes and a '#'
	}
	args := []any{"CONFIG", "SET"}
	for _, a := range set {
		args = append(args, a)
	}
	if err := c.Do(ctx, args...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "CONFIG", "REWRITE").Err(); err != nil {
		t.Fatalf("CONFIG REWRITE: %v", err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	t.Logf("rewritten file:\n%s", text)
	for _, kept := range []string{"# lsmgo test config\n", "maxclients = 3000  # clients # and more\n",
		"\n\n# the slow log\nslowlog-max-len = 5\n", "# secret\n"} {
		if !strings.Contains(text, kept) {
			t.Errorf("rewritten file lost %q:\n%s", kept, text)
		}
	}
	if strings.Contains(text, "lua-time-limit") {
		t.Errorf("alias written next to busy-reply-threshold:\n%s", text)
	}
	if strings.Index(text, "maxclients") > strings.Index(text, "slowlog-max-len") {
		t.Errorf("order changed:\n%s", text)
	}

	// A restart with the same Config (and so the same file) resolves to
	// the running settings.
	got, err := s.base.resolve()
	if err != nil {
		t.Fatalf("rewritten file does not resolve: %v\n%s", err, text)
	}
	running := s.config()
	for _, st := range settings {
		if st.fixed {
			continue // never in the file; port is the bound listener's
		}
		if g, w := st.get(&got), st.get(running); g != w {
			t.Errorf("%s: file gives %q, server runs %q", st.name, g, w)
		}
	}

	if err := c.Do(ctx, "CONFIG", "REWRITE").Err(); err != nil {
		t.Fatalf("second CONFIG REWRITE: %v", err)
	}
	again, _ := os.ReadFile(file)
	eq(t, "second rewrite", string(again), text)
}

func TestConfigRewriteWithoutFile(t *testing.T) {
	s := startServer(t, nil)
	err := newClient(t, s, 2, nil).Do(context.Background(), "CONFIG", "REWRITE").Err()
	eq(t, "error", errString(err), "ERR The server is running without a config file")
}

// TestConfigRewriteUnwritable: a file whose temporary sibling cannot be
// created gets Redis' error with the reason and stays as it was. A name
// so long that the temporary name passes NAME_MAX fails even for root.
func TestConfigRewriteUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), strings.Repeat("c", 240)+".toml")
	writeFile(t, file, "maxclients = 2000\n")
	s := startServer(t, func(c *Config) { c.ConfigFile = file })
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	if err := c.ConfigSet(ctx, "maxclients", "3000").Err(); err != nil {
		t.Fatal(err)
	}
	err := c.Do(ctx, "CONFIG", "REWRITE").Err()
	if msg := errString(err); !strings.HasPrefix(msg, "ERR Rewriting config file: ") || !strings.Contains(msg, "file name too long") {
		t.Errorf("error %q, want ERR Rewriting config file: ... file name too long", msg)
	}
	data, _ := os.ReadFile(file)
	eq(t, "file after failed rewrite", string(data), "maxclients = 2000\n")
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestConfigRewriteText checks the line editing alone on CRLF files and
// on lines whose value already matches in another spelling.
func TestConfigRewriteText(t *testing.T) {
	base := DefaultConfig()
	cur := base
	cur.MaxClients = 7
	cur.SlowlogMaxLen = 9
	cur.ProtoMaxBulkLen = 1 << 20
	for _, tc := range []struct{ in, want string }{
		{"maxclients = 5\r\n# c\r\nslowlog-max-len = 1 # n\r\n",
			"maxclients = 7\r\n# c\r\nslowlog-max-len = 9 # n\r\nproto-max-bulk-len = 1048576\r\n"},
		{"proto-max-bulk-len = \"1mb\" # same value\nmaxclients = '7'\nslowlog-max-len = 9\n", ""},
		{"", "maxclients = 7\nproto-max-bulk-len = 1048576\nslowlog-max-len = 9\n"}, // table order
	} {
		want := tc.want
		if want == "" {
			want = tc.in
		}
		got, _ := rewriteConfigText(tc.in, &cur, &base, nil, false)
		eq(t, "rewrite of "+strings.ReplaceAll(tc.in, "\r", `\r`), got, want)
	}
}
