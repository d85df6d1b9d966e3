package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// suiteFailure is one line of the known-failures file: a test of a unit
// that lsmgo fails, and why. The test abortedTest stands for a unit that
// stops early, wholly or one server block of it; the tests it did not
// reach are not judged.
type suiteFailure struct{ unit, test, reason string }

const (
	abortedTest    = "(stopped early)"
	todoReason     = "TODO: reason"
	redisTooReason = "fails on Redis 7.0.15 too in this mode"
	// flakyPrefix starts the reason of a test that fails only sometimes:
	// its passing is no reason to delete its line.
	flakyPrefix = "flaky: "
)

const suiteListHeader = `# Tests of Redis 7.0.15's own suite (../shared/redis-tests, external
# mode, PROFILE=generic) that lsmgo serve is known to fail, one a line:
# unit<TAB>test<TAB>reason. TestRedisSuite (redissuite_test.go) fails when
# a test fails that is not here (a regression) and when a test here no
# longer fails (delete its line): the list can only shrink.
# A test named "(stopped early)" marks a unit that stops before its end,
# or one of whose server blocks does (an error outside any test); the
# reason says where. The tests it did not reach are not judged.
# A reason starting "flaky: " marks a test that fails only sometimes: it
# may pass without its line having to go.
# Regenerate (keeps reasons; new lines get "TODO: reason" for a human, or
# the Redis one when redis-server fails the test too), from the repository
# root, for all units or some:
#   go test -run '^TestRedisSuite$' -timeout 90m ./server/cmd/lsmgo \
#     -redis-suite.update -redis-suite.redis [-redis-suite.units 'unit/x unit/y']
`

// readSuiteList reads the known-failures file; a missing file is empty.
func readSuiteList(path string) ([]suiteFailure, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var list []suiteFailure
	for i, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 || f[0] == "" || f[1] == "" || f[2] == "" {
			return nil, fmt.Errorf("%s:%d: want unit<TAB>test<TAB>reason, got %q", path, i+1, line)
		}
		list = append(list, suiteFailure{f[0], f[1], f[2]})
	}
	return list, nil
}

// writeSuiteList writes the file, units in the order of units and each
// unit's tests in the order given.
func writeSuiteList(path string, units []string, list []suiteFailure) error {
	var b strings.Builder
	b.WriteString(suiteListHeader)
	for _, u := range units {
		for _, f := range list {
			if f.unit == u {
				fmt.Fprintf(&b, "%s\t%s\t%s\n", f.unit, f.test, f.reason)
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// unitEntries is the part of list about unit.
func unitEntries(list []suiteFailure, unit string) []suiteFailure {
	var out []suiteFailure
	for _, f := range list {
		if f.unit == unit {
			out = append(out, f)
		}
	}
	return out
}

// compareUnit says how a run of unit differs from what list expects:
// failures not listed, and listed failures that no longer happen. In a
// unit that stopped early, a listed test that did not run is not judged.
func compareUnit(unit string, listed []suiteFailure, got suiteResult) []string {
	var problems []string
	known := map[string]bool{}
	listedAbort := false
	for _, f := range listed {
		if f.test == abortedTest {
			listedAbort = true
		}
		known[f.test] = true
	}
	for _, name := range got.failed {
		if !known[name] {
			problems = append(problems, fmt.Sprintf("%s: %q fails and is not in the list: a regression (or add it with -redis-suite.update and give a reason)", unit, name))
		}
	}
	switch {
	case got.aborted != "" && !listedAbort:
		problems = append(problems, fmt.Sprintf("%s: the unit stopped early, which the list does not expect: %s", unit, got.aborted))
	case got.aborted == "" && listedAbort:
		problems = append(problems, fmt.Sprintf("%s: the unit now runs to its end: delete its %q line (and run -redis-suite.update for the tests it now reaches)", unit, abortedTest))
	}
	failed, passed := got.failedSet(), nameSet(got.passed)
	for _, f := range listed {
		if f.test == abortedTest || failed[f.test] || strings.HasPrefix(f.reason, flakyPrefix) ||
			(got.aborted != "" && !passed[f.test]) {
			continue
		}
		problems = append(problems, fmt.Sprintf("%s: %q is listed but no longer fails: delete its line from the list", unit, f.test))
	}
	return problems
}

// updateUnit is the new list entries of unit after a run: its failures,
// with the reason they had, or the reference's, or todoReason. Listed
// tests a unit that stopped early did not reach, and flaky ones, keep
// their lines.
// redisFails holds the tests the reference fails, and abortedTest when
// it stopped early too.
func updateUnit(unit string, listed []suiteFailure, got suiteResult, redisFails map[string]bool) []suiteFailure {
	reasons := map[string]string{}
	for _, f := range listed {
		reasons[f.test] = f.reason
	}
	reasonOf := func(test, fallback string) string {
		if r := reasons[test]; r != "" && r != todoReason {
			return r
		}
		if redisFails[test] {
			return redisTooReason
		}
		return fallback
	}
	var out []suiteFailure
	seen := map[string]bool{}
	for _, name := range got.failed {
		if !seen[name] {
			seen[name] = true
			out = append(out, suiteFailure{unit, name, reasonOf(name, todoReason)})
		}
	}
	reached := nameSet(got.passed)
	for _, f := range listed {
		keep := strings.HasPrefix(f.reason, flakyPrefix) || (got.aborted != "" && !reached[f.test])
		if f.test != abortedTest && !seen[f.test] && keep {
			out = append(out, f)
		}
	}
	if got.aborted != "" {
		out = append(out, suiteFailure{unit, abortedTest, reasonOf(abortedTest, "TODO: reason; "+got.aborted)})
	}
	return out
}
