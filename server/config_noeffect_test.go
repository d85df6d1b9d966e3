package server

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestNoEffectSettingsDiff sets every no-effect setting Redis has to
// good and bad values on lsmgo and on a real redis-server and compares
// the replies: the same defaults, the same errors for the same values,
// the same value read back, through both names of an aliased setting.
func TestNoEffectSettingsDiff(t *testing.T) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	ours := dialDiff(t, "tcp", s.Addr().String(), 2)
	theirs := dialDiff(t, "unix", redisSock, 2)
	values := []string{"0", "1", "7", "-1", "-2", "-6", "128", "2147483647", "2147483648", "-2147483649",
		"9223372036854775807", "9223372036854775808", "1kb", "3K", "2mb", "1gb", "abc", "", "1.5", "12parsecs",
		"yes", "no", "YES", "maybe",
		"900 1", "900 1 300 10", "0900 01", "900", "-1 5", "10 -1", " 10  5 ", "1e3 5", "10 5 10 5"}
	exchange := func(args ...string) (string, string) {
		var got [2]string
		for i, d := range []*diffConn{ours, theirs} {
			d.send(args)
			r, err := d.flushRead(1)
			if err != nil {
				t.Fatal(err)
			}
			got[i] = render(r[0], unorderedPairs)
		}
		return got[0], got[1]
	}
	var known []string
	for _, st := range settings {
		if !st.noEffect {
			continue
		}
		if _, theirGet := exchange("CONFIG", "GET", st.name); !strings.Contains(theirGet, st.name) {
			t.Logf("%s: not a setting of this redis-server; skipped", st.name)
			continue
		}
		known = append(known, st.name)
	}
	// All of them read back the same, aliases included, after each SET.
	getAll := append([]string{"CONFIG", "GET"}, known...)
	if o, r := exchange(getAll...); o != r {
		t.Errorf("defaults: lsmgo %s, redis %s", o, r)
	}
	compared := 0
	for _, name := range known {
		for _, v := range values {
			if t.Failed() {
				return // one difference repeats in every later GET
			}
			if o, r := exchange("CONFIG", "SET", name, v); o != r {
				t.Errorf("CONFIG SET %s %q: lsmgo %s, redis %s", name, v, o, r)
			}
			if o, r := exchange(getAll...); o != r {
				t.Errorf("after CONFIG SET %s %q: lsmgo %s, redis %s", name, v, o, r)
			}
			compared++
		}
	}
	if compared == 0 {
		t.Fatal("nothing compared")
	}
	t.Logf("%d CONFIG SETs compared", compared)
}

// TestNoEffectSettingsDocumented checks that doc/server.md's table of
// settings accepted without effect names exactly the table's no-effect
// settings, with their defaults.
func TestNoEffectSettingsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../doc/server.md")
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile("(?s)<!-- no-effect settings -->(.*?)<!-- end -->").FindSubmatch(doc)
	if section == nil {
		t.Fatal("doc/server.md has no <!-- no-effect settings --> section")
	}
	documented := map[string]string{} // name: default
	for _, row := range regexp.MustCompile("(?m)^\\| (`.*`) \\| (.*) \\|$").FindAllSubmatch(section[1], -1) {
		def := strings.Trim(string(row[2]), "`")
		if def == "empty" {
			def = ""
		}
		for _, name := range regexp.MustCompile("`([a-z0-9-]+)`").FindAllSubmatch(row[1], -1) {
			documented[string(name[1])] = def
		}
	}
	var cfg Config
	for _, st := range settings {
		if !st.noEffect {
			continue
		}
		if def, ok := documented[st.name]; !ok {
			t.Errorf("%s is not in doc/server.md's no-effect table", st.name)
		} else if def != st.get(&cfg) {
			t.Errorf("%s: doc/server.md says the default is %q, the table %q", st.name, def, st.get(&cfg))
		}
		delete(documented, st.name)
	}
	for name := range documented {
		t.Errorf("doc/server.md lists %s as a no-effect setting; the table does not", name)
	}
}
