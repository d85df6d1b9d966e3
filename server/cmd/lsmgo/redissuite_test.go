package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	suiteUpdate = flag.Bool("redis-suite.update", false,
		"TestRedisSuite: rewrite "+suiteListPath+" from this run instead of comparing")
	suiteWithRedis = flag.Bool("redis-suite.redis", false,
		"TestRedisSuite with -redis-suite.update: also run each unit against redis-server and mark the tests it fails too")
	suiteUnits = flag.String("redis-suite.units", "",
		"TestRedisSuite: space-separated units to run instead of its list")
	suiteUnitTimeout = flag.Duration("redis-suite.unit-timeout", 4*time.Minute,
		"TestRedisSuite: how long one unit may run before it is killed")
)

const suiteListPath = "testdata/redis-suite-failures.txt"

// suiteUnitsAll are the units TestRedisSuite runs, in the list file's
// order: the data types, keyspace, transactions, scripting and the
// connection-level units. Keyspace notifications are tested in unit/pubsub
// (7.0.15 has no unit/keyspace-events).
var suiteUnitsAll = []string{
	"unit/type/string", "unit/type/incr", "unit/type/hash", "unit/type/list",
	"unit/type/list-2", "unit/type/list-3", "unit/type/set", "unit/type/zset",
	"unit/keyspace", "unit/expire", "unit/multi", "unit/pubsub", "unit/scan",
	"unit/info", "unit/info-command", "unit/protocol", "unit/other", "unit/dump",
	"unit/auth", "unit/quit", "unit/scripting", "unit/functions", "unit/acl",
	"unit/introspection", "unit/introspection-2", "unit/sort", "unit/bitops", "unit/bitfield", "unit/hyperloglog",
	"unit/type/stream", "unit/type/stream-cgroups", "unit/geo", "unit/tracking",
}

// suiteUnitsShort are the units -short runs, which CI runs under -race:
// those that take Redis itself under 10 s each in this mode (55 s in
// all on a 2-core machine), over the commonest commands, so that they
// stay quick as lsmgo comes to run more of each unit.
var suiteUnitsShort = []string{
	"unit/type/string", "unit/type/incr", "unit/type/hash", "unit/type/set",
	"unit/keyspace", "unit/expire", "unit/multi", "unit/pubsub", "unit/scan",
	"unit/info-command", "unit/protocol", "unit/quit", "unit/auth",
	"unit/functions", "unit/bitfield",
}

// suiteDir is Redis' test suite, next to the repository (README.md there),
// or where LSMGO_REDIS_TESTS says.
func suiteDir(t *testing.T) string {
	dir := os.Getenv("LSMGO_REDIS_TESTS")
	if dir == "" {
		dir = "../../../../shared/redis-tests"
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(abs, "run-external.sh")); err != nil {
		t.Skipf("Redis' test suite is not at %s (set LSMGO_REDIS_TESTS): %v", abs, err)
	}
	if _, err := exec.LookPath("tclsh"); err != nil {
		t.Skipf("Redis' test suite needs tclsh (apt-get install tcl): %v", err)
	}
	return abs
}

// TestRedisSuite runs units of Redis 7.0.15's own test suite against a
// fresh `lsmgo serve` each (some units leave settings behind) and checks
// the failing tests against the known-failures list: a failure not listed
// is a regression, and a listed test that passes must leave the list.
func TestRedisSuite(t *testing.T) {
	suite := suiteDir(t)
	units := suiteUnitsAll
	if testing.Short() {
		units = suiteUnitsShort
	}
	if *suiteUnits != "" {
		units = strings.Fields(*suiteUnits)
	}
	list, err := readSuiteList(suiteListPath)
	if err != nil {
		t.Fatal(err)
	}
	var redisBin string
	if *suiteUpdate && *suiteWithRedis {
		if redisBin, err = exec.LookPath("redis-server"); err != nil {
			t.Fatalf("-redis-suite.redis needs redis-server: %v", err)
		}
	}

	updated := map[string][]suiteFailure{}
	for _, unit := range units {
		t.Run(unit, func(t *testing.T) {
			srv := startChild(t, "--dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http", "",
				"--appendfsync", "no", "--loglevel", "warning")
			got := runSuiteUnit(t, suite, srv.addr, unit, *suiteUnitTimeout)
			t.Logf("lsmgo: %d passed, %d failed, %d skipped in %s%s", len(got.passed), len(got.failed),
				len(got.skipped), got.elapsed.Round(time.Second), abortNote(got))
			// What failed and how, flaky tests included, so that a CI log
			// tells a flake's cause without the runtest log.
			for _, name := range got.failed {
				t.Logf("failed: %s: %s", name, got.why[name])
			}
			listed := unitEntries(list, unit)
			if !*suiteUpdate {
				for _, p := range compareUnit(unit, listed, got) {
					t.Error(p)
				}
				return
			}
			var redisFails map[string]bool
			if redisBin != "" {
				ref := runSuiteUnit(t, suite, startReferenceRedis(t, redisBin), unit, *suiteUnitTimeout)
				t.Logf("redis-server: %d passed, %d failed, %d skipped in %s%s", len(ref.passed), len(ref.failed),
					len(ref.skipped), ref.elapsed.Round(time.Second), abortNote(ref))
				redisFails = ref.failedSet()
				if ref.aborted != "" {
					redisFails[abortedTest] = true
				}
			}
			updated[unit] = updateUnit(unit, listed, got, redisFails)
		})
	}
	if !*suiteUpdate {
		return
	}
	var merged []suiteFailure
	for _, f := range list {
		if _, ran := updated[f.unit]; !ran {
			merged = append(merged, f)
		}
	}
	for _, entries := range updated {
		merged = append(merged, entries...)
	}
	if err := writeSuiteList(suiteListPath, suiteUnitsAll, merged); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", suiteListPath)
}

func abortNote(r suiteResult) string {
	if r.aborted == "" {
		return ""
	}
	return "; stopped early: " + r.aborted
}
