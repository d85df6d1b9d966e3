package server

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestInfoLikeRedis runs the same commands against the server and a real
// redis-server and compares what INFO reports: the sections of INFO,
// INFO default, INFO all and INFO everything (lsmgo adds its own last),
// the CPU fields, and the exact command and error counts of commandstats
// and errorstats, times aside.
func TestInfoLikeRedis(t *testing.T) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	ours := dialDiff(t, "tcp", s.Addr().String(), 2)
	theirs := dialDiff(t, "unix", redisSock, 2)
	run := [][]string{
		{"GET", "a"}, {"GET", "a"}, {"GET", "a"}, {"GET"}, {"HGET", "a"},
		{"SET", "a", "1"}, {"HGET", "a", "f"}, {"NOSUCHCMD", "x"}, {"INCR", "a"},
		{"SET", "b", "x"}, {"INCR", "b"}, {"CONFIG", "GET"}, {"CONFIG", "NOSUCH"},
	}
	info := func(d *diffConn, section ...string) string {
		t.Helper()
		d.send(append([]string{"INFO"}, section...))
		v, err := d.flushRead(1)
		if err != nil {
			t.Fatal(err)
		}
		return string(v[0].Str)
	}
	for _, d := range []*diffConn{ours, theirs} {
		for _, args := range run {
			d.send(args)
		}
		if _, err := d.flushRead(len(run)); err != nil {
			t.Fatal(err)
		}
	}

	headers := func(text string) []string {
		var hs []string
		for _, line := range strings.Split(text, "\r\n") {
			if strings.HasPrefix(line, "# ") && line != "# Lsmgo" {
				hs = append(hs, line)
			}
		}
		return hs
	}
	for _, sel := range [][]string{nil, {"default"}, {"all"}, {"everything"}, {"cpu", "errorstats"}} {
		got, want := headers(info(ours, sel...)), headers(info(theirs, sel...))
		if !slices.Equal(got, want) {
			t.Errorf("INFO %v sections:\n lsmgo %q\n redis %q", sel, got, want)
		}
	}

	cpu := info(ours, "cpu")
	for _, f := range []string{"used_cpu_sys", "used_cpu_user", "used_cpu_sys_children", "used_cpu_user_children"} {
		if !regexp.MustCompile(`(?m)^` + f + `:\d+\.\d{6}\r$`).MatchString(cpu) {
			t.Errorf("INFO cpu lacks %s:\n%s", f, cpu)
		}
	}

	// The counts, with times masked; INFO's own calls are not counted
	// yet, in either server, while INFO runs.
	times := regexp.MustCompile(`usec=\d+,usec_per_call=[\d.]+`)
	counts := func(d *diffConn) string {
		text := info(d, "commandstats") + info(d, "errorstats")
		var keep []string
		for _, line := range strings.Split(text, "\r\n") {
			if strings.HasPrefix(line, "cmdstat_info:") {
				continue // the INFO that printed the commandstats
			}
			keep = append(keep, times.ReplaceAllString(line, "usec=T"))
		}
		// Redis lists commands in its hash table's order.
		slices.Sort(keep)
		return strings.Join(keep, "\n")
	}
	if got, want := counts(ours), counts(theirs); got != want {
		t.Errorf("commandstats and errorstats differ:\n lsmgo:\n%s\n redis:\n%s", got, want)
	}
	stats := info(ours, "stats")
	if !strings.Contains(stats, "total_error_replies:7\r\n") {
		t.Errorf("INFO stats total_error_replies, want 7:\n%s", stats)
	}
	// CONFIG RESETSTAT forgets the errors, as Redis' does.
	for _, d := range []*diffConn{ours, theirs} {
		d.do(t, "CONFIG", "RESETSTAT")
	}
	if got, want := info(ours, "errorstats"), info(theirs, "errorstats"); got != want {
		t.Errorf("errorstats after CONFIG RESETSTAT:\n lsmgo %q\n redis %q", got, want)
	}
	if stats := info(ours, "stats"); !strings.Contains(stats, "total_error_replies:0\r\n") {
		t.Errorf("INFO stats total_error_replies after CONFIG RESETSTAT, want 0:\n%s", stats)
	}
	// CONFIG RESETSTAT empties the latency histograms too.
	for _, d := range []*diffConn{ours, theirs} {
		if lat := info(d, "latencystats"); strings.Contains(lat, "usec_get:") {
			t.Errorf("INFO latencystats after CONFIG RESETSTAT:\n%s", lat)
		}
		d.do(t, "GET", "x")
		lat := info(d, "latencystats")
		if !regexp.MustCompile(`(?m)^latency_percentiles_usec_get:p50=[\d.]+,p99=[\d.]+,p99\.9=[\d.]+\r$`).MatchString(lat) {
			t.Errorf("INFO latencystats:\n%s", lat)
		}
	}
}
