package main

import (
	"reflect"
	"strings"
	"testing"
)

// A runtest log as the suite writes it, colour codes included.
const sampleSuiteLog = "Testing unit/x\n" +
	"[\x1b[0;32;49mok\x1b[0m]: A passes (1 ms)\n" +
	"[\x1b[0;31;49merr\x1b[0m]: B fails: badly in tests/unit/x.tcl\n" +
	"Expected 1 got 2\n" +
	"[\x1b[0;36;49mignore\x1b[0m]: C: Tag: needs:debug denied\n" +
	"[\x1b[0;33;49mskip\x1b[0m]: D\n"

// TestParseSuiteLog reads passes, failures, skips and the three ways a
// unit stops early from runtest logs.
func TestParseSuiteLog(t *testing.T) {
	done := "[1/1 \x1b[0;33;49mdone\x1b[0m]: unit/x (1 seconds)\n"
	r := parseSuiteLog(sampleSuiteLog + done)
	if !reflect.DeepEqual(r.passed, []string{"A passes"}) || !reflect.DeepEqual(r.failed, []string{"B fails: badly"}) ||
		len(r.skipped) != 2 || r.aborted != "" || r.why["B fails: badly"] != "Expected 1 got 2" {
		t.Fatalf("parsed %+v", r)
	}
	for name, log := range map[string]string{
		"exception":  sampleSuiteLog + "[exception]: Executing test client: ERR nope.\nmore\n",
		"block stop": sampleSuiteLog + "[err]: own option for CONFIG SET\nERR Unknown option for CONFIG SET\n" + done,
		"no done":    sampleSuiteLog,
	} {
		if r := parseSuiteLog(log); r.aborted == "" || len(r.failed) != 1 {
			t.Errorf("%s: parsed %+v, want one failure and a stop", name, r)
		}
	}
	if r := parseSuiteLog(sampleSuiteLog + "[err]: own option\nERR Unknown option\n" + done); !strings.Contains(r.aborted, "ERR Unknown option") {
		t.Errorf("block stop reason %q lacks the error", r.aborted)
	}
}

// TestCompareUnit: a failure not listed and a listed test that passes
// are both problems; a listed test a stopped unit did not reach is not.
func TestCompareUnit(t *testing.T) {
	listed := []suiteFailure{{"u", "B", "r"}, {"u", "C", "r"}, {"u", "D", "r"}, {"u", "A", flakyPrefix + "r"}}
	got := suiteResult{passed: []string{"A", "C"}, failed: []string{"B", "E"}}
	problems := compareUnit("u", listed, got)
	want := []string{`"E" fails and is not in the list`, `"C" is listed but no longer fails`, `"D" is listed but no longer fails`}
	if len(problems) != len(want) {
		t.Fatalf("problems %q, want %d", problems, len(want))
	}
	for i, w := range want {
		if !strings.Contains(problems[i], w) {
			t.Errorf("problem %q, want %q", problems[i], w)
		}
	}
	got.aborted = "stop"
	listed = append(listed[:3], suiteFailure{"u", "E", "r"}, suiteFailure{"u", abortedTest, "r"})
	if problems := compareUnit("u", listed, got); len(problems) != 1 || !strings.Contains(problems[0], `"C"`) {
		t.Errorf("stopped unit: problems %q, want only C's", problems)
	}
	if problems := compareUnit("u", listed[:4], got); len(problems) != 2 || !strings.Contains(problems[0], "stopped early") {
		t.Errorf("unlisted stop: problems %q", problems)
	}
}

// TestUpdateUnit keeps reasons, marks new failures, takes the reference's
// verdict and keeps listed tests a stopped unit did not reach.
func TestUpdateUnit(t *testing.T) {
	listed := []suiteFailure{{"u", "B", "known"}, {"u", "D", "later"}, {"u", "C", todoReason}, {"u", "F", flakyPrefix + "x"}}
	got := suiteResult{passed: []string{"A", "F"}, failed: []string{"B", "C", "E", "E"}, aborted: "stop"}
	out := updateUnit("u", listed, got, map[string]bool{"C": true})
	want := []suiteFailure{
		{"u", "B", "known"}, {"u", "C", redisTooReason}, {"u", "E", todoReason},
		{"u", "D", "later"}, {"u", "F", flakyPrefix + "x"}, {"u", abortedTest, "TODO: reason; stop"},
	}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("updated\n%q\nwant\n%q", out, want)
	}
}
