package server

import (
	"context"
	"runtime/debug"
	"strings"
	"testing"
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
