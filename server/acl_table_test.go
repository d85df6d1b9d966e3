package server

import (
	"flag"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
	"github.com/lsmgo-dev/lsmgo/server/resp"
)

var rewriteACLTable = flag.Bool("rewrite-acl-table", false,
	"TestACLTableMatchesRedis: rewrite "+aclTableFile+" from redis-server's COMMAND INFO")

// TestACLTableMatchesRedis checks the committed ACL table (categories and
// key specs of every Redis command) against the redis-server on PATH,
// which is where it came from: -rewrite-acl-table regenerates it.
func TestACLTableMatchesRedis(t *testing.T) {
	sock := startRedis(t)
	rc := testutil.Dial(t, "unix", sock)
	rc.Do(t, []byte("HELLO"), []byte("3"))
	info := rc.Do(t, []byte("COMMAND"), []byte("INFO"))
	var lines []string
	for _, cmd := range info.Array {
		lines = appendACLTableLines(lines, cmd)
	}
	slices.Sort(lines)
	want := strings.Join(lines, "\n") + "\n"
	if *rewriteACLTable {
		if err := os.WriteFile(aclTableFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if aclTableText != want {
		t.Fatalf("%s differs from redis-server's COMMAND INFO; rerun with -rewrite-acl-table", aclTableFile)
	}
}

// appendACLTableLines renders one COMMAND INFO entry, and its
// subcommands', in the table's line format (acl_table.go).
func appendACLTableLines(lines []string, cmd resp.Value) []string {
	name := string(cmd.Array[0].Str)
	var cats []string
	for _, c := range cmd.Array[6].Array {
		cats = append(cats, strings.TrimPrefix(string(c.Str), "@"))
	}
	var specs []string
	for _, ks := range cmd.Array[8].Array {
		specs = append(specs, renderKeySpec(ks))
	}
	lines = append(lines, name+"\t"+strings.Join(cats, " ")+"\t"+strings.Join(specs, " "))
	for _, sub := range cmd.Array[9].Array {
		lines = appendACLTableLines(lines, sub)
	}
	return lines
}

// renderKeySpec writes a key spec as flags/begin/find (acl_table.go).
func renderKeySpec(ks resp.Value) string {
	m := respMap(ks)
	var flags []string
	for _, f := range m["flags"].Array {
		flags = append(flags, strings.ToLower(string(f.Str)))
	}
	begin, find := respMap(m["begin_search"]), respMap(m["find_keys"])
	bspec, fspec := respMap(begin["spec"]), respMap(find["spec"])
	var b, f string
	switch string(begin["type"].Str) {
	case "index":
		b = "i" + strconv.FormatInt(bspec["index"].Int, 10)
	case "keyword":
		b = "k" + string(bspec["keyword"].Str) + ":" + strconv.FormatInt(bspec["startfrom"].Int, 10)
	default:
		b = "u"
	}
	switch string(find["type"].Str) {
	case "range":
		f = "r" + strconv.FormatInt(fspec["lastkey"].Int, 10) + "," + strconv.FormatInt(fspec["keystep"].Int, 10) + "," + strconv.FormatInt(fspec["limit"].Int, 10)
	case "keynum":
		f = "n" + strconv.FormatInt(fspec["keynumidx"].Int, 10) + "," + strconv.FormatInt(fspec["firstkey"].Int, 10) + "," + strconv.FormatInt(fspec["keystep"].Int, 10)
	default:
		f = "u"
	}
	return strings.Join(flags, ",") + "/" + b + "/" + f
}

func respMap(v resp.Value) map[string]resp.Value {
	m := map[string]resp.Value{}
	for i := 0; i+1 < len(v.Array); i += 2 {
		m[string(v.Array[i].Str)] = v.Array[i+1]
	}
	return m
}
