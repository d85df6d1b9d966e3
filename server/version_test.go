package server

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestBuildOf(t *testing.T) {
	const pkg = "example.com/lsmgo/server"
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want Build
	}{
		{"no build info", nil, Build{devel, devel}},
		{"main module, no VCS", &debug.BuildInfo{Main: debug.Module{Path: "example.com/lsmgo", Version: devel}}, Build{devel, devel}},
		{"main module built from a dirty checkout", &debug.BuildInfo{
			Main: debug.Module{Path: "example.com/lsmgo", Version: "v1.2.3"}, Settings: vcs}, Build{"v1.2.3", "abc123+dirty"}},
		{"a dependency of another program", &debug.BuildInfo{
			Main: debug.Module{Path: "example.com/app", Version: devel}, Settings: vcs,
			Deps: []*debug.Module{{Path: "example.com/lsmgo", Version: "v0.9.0"}, {Path: "example.com/lsmgo/server", Version: "v1.0.0"}},
		}, Build{"v1.0.0", devel}},
		{"a replaced dependency", &debug.BuildInfo{
			Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{{Path: "example.com/lsmgo", Version: "v0.9.0", Replace: &debug.Module{Path: "../lsmgo", Version: ""}}},
		}, Build{devel, devel}},
		{"not in the binary", &debug.BuildInfo{Main: debug.Module{Path: "example.com/lsmgox", Version: "v1.0.0"}}, Build{devel, devel}},
	} {
		if got := buildOf(tc.bi, pkg); got != tc.want {
			t.Errorf("%s: buildOf = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestInfoVersions checks INFO's server section reports lsmgo's own build
// next to the Redis version it emulates.
func TestInfoVersions(t *testing.T) {
	s := startServer(t, nil)
	info, err := newClient(t, s, 2, nil).Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	b := BuildInfo()
	for _, want := range []string{"redis_version:" + Version + "\r\n", "lsmgo_version:" + b.Version + "\r\n", "lsmgo_commit:" + b.Commit + "\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO server lacks %q:\n%s", want, info)
		}
	}
}

// TestVersionIsNewestImplemented keeps redis_version honest
// (doc/server.md, INFO): it is the newest Redis version any command or
// subcommand in the table comes from, and that version's additions to the
// commands lsmgo has, which clients gate on it, work.
func TestVersionIsNewestImplemented(t *testing.T) {
	newest := "0.0.0"
	for _, cmd := range allCommands {
		if versionLess(newest, cmd.since) {
			newest = cmd.since
		}
	}
	eq(t, "newest command's since", newest, Version)

	s := startServer(t, nil)
	ctx := context.Background()
	c := newClient(t, s, 2, nil)
	// Redis 7.2's additions to the families lsmgo implements.
	if err := c.Do(ctx, "CLIENT", "SETINFO", "LIB-NAME", "probe").Err(); err != nil {
		t.Errorf("CLIENT SETINFO: %v", err)
	}
	c.ZAdd(ctx, "z", redis.Z{Score: 1.5, Member: "m"})
	got, err := c.Do(ctx, "ZRANK", "z", "m", "WITHSCORE").Slice()
	if err != nil || fmt.Sprint(got) != "[0 1.5]" {
		t.Errorf("ZRANK WITHSCORE: %v, %v", got, err)
	}
}

// versionLess compares dotted version numbers.
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range min(len(as), len(bs)) {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}
