package datadriven

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that collects failures instead of failing, so
// that the runner's own failures can be checked.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(r)
}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

// runRecorded runs script through run and returns the failures reported.
func runRecorded(t *testing.T, script string, run func(testing.TB, *Case) string) (errs []string, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != r {
				panic(p)
			}
		}()
		RunFile(r, path, run)
	}()
	return r.errors, path
}

// echo returns the command, its fields and its input, one per line.
func echo(_ testing.TB, c *Case) string {
	return strings.Join(append([]string{c.Cmd + "|" + strings.Join(c.Fields, ",")}, c.Input), "\n")
}

const script = `# comment
cmd a k=v
in1
in2
----
cmd|a,k=v
in1
in2

# no input, empty output
nothing
----

cmd
----
cmd|
`

func TestRunFilePasses(t *testing.T) {
	var seen []string
	errs, _ := runRecorded(t, script, func(tb testing.TB, c *Case) string {
		seen = append(seen, c.Pos)
		if c.Cmd == "nothing" {
			return ""
		}
		return echo(tb, c)
	})
	if len(errs) != 0 {
		t.Fatalf("unexpected failures: %q", errs)
	}
	if len(seen) != 3 || !strings.HasSuffix(seen[0], ":2") || !strings.HasSuffix(seen[1], ":11") || !strings.HasSuffix(seen[2], ":14") {
		t.Fatalf("cases at %q, want lines 2, 11 and 14", seen)
	}
}

func TestRunFileReportsDifferences(t *testing.T) {
	errs, _ := runRecorded(t, script, func(testing.TB, *Case) string { return "other" })
	if len(errs) != 3 || !strings.Contains(errs[0], ":2: cmd a k=v\ngot:\nother\nwant:\ncmd|a,k=v") {
		t.Fatalf("failures %q, want one per case naming its position", errs)
	}
}

func TestRunFileRewrite(t *testing.T) {
	*rewrite = true
	defer func() { *rewrite = false }()
	errs, path := runRecorded(t, script, func(tb testing.TB, c *Case) string {
		return "new " + c.Cmd
	})
	if len(errs) != 0 {
		t.Fatalf("rewrite reported %q", errs)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "# comment\ncmd a k=v\nin1\nin2\n----\nnew cmd\n\n# no input, empty output\nnothing\n----\nnew nothing\n\ncmd\n----\nnew cmd\n"
	if string(got) != want {
		t.Fatalf("rewritten script:\n%s\nwant:\n%s", got, want)
	}
}

func TestRunFileMalformed(t *testing.T) {
	for _, tc := range []struct{ name, script, output, want string }{
		{"no separator", "cmd\ninput\n", "", "no ---- after the command"},
		{"no case", "# only a comment\n\n", "", "has no case"},
		{"blank line in output", "cmd\n----\na\n", "a\n\nb", "blank line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs, _ := runRecorded(t, tc.script, func(testing.TB, *Case) string { return tc.output })
			if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
				t.Fatalf("failures %q, want one saying %q", errs, tc.want)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	c := &Case{Pos: "f:1", Cmd: "c", Fields: []string{"bare", "n=12", "s=x=y"}}
	if v, ok := c.Arg("s"); !ok || v != "x=y" {
		t.Errorf("Arg(s) = %q, %v", v, ok)
	}
	if !c.HasArg("bare") || c.HasArg("missing") {
		t.Error("HasArg wrong")
	}
	if n := c.IntArg(t, "n", 5); n != 12 {
		t.Errorf("IntArg(n) = %d", n)
	}
	if n := c.IntArg(t, "missing", 5); n != 5 {
		t.Errorf("IntArg(missing) = %d", n)
	}
	r := &recorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		c.IntArg(r, "bare", 0)
	}()
	if len(r.errors) != 1 || !strings.HasPrefix(r.errors[0], "f:1: c: bad bare") {
		t.Errorf("IntArg on a bad value reported %q", r.errors)
	}
}

// recordingPositioner records the calls Position makes.
type recordingPositioner struct{ calls []string }

func (r *recordingPositioner) call(s string) bool {
	r.calls = append(r.calls, s)
	return len(r.calls)%2 == 1
}
func (r *recordingPositioner) First() bool { return r.call("First") }
func (r *recordingPositioner) Last() bool  { return r.call("Last") }
func (r *recordingPositioner) Next() bool  { return r.call("Next") }
func (r *recordingPositioner) Prev() bool  { return r.call("Prev") }
func (r *recordingPositioner) SeekGE(k []byte) bool {
	return r.call("SeekGE(" + string(k) + ")")
}
func (r *recordingPositioner) SeekLT(k []byte) bool {
	return r.call("SeekLT(" + string(k) + ")")
}

func TestPosition(t *testing.T) {
	r := &recordingPositioner{}
	for i, line := range []string{"first", "last", "next", "prev", "seek-ge b", "seek-lt c d", "close", "bogus"} {
		valid, known := Position(r, line)
		if wantKnown := i < 6; known != wantKnown {
			t.Errorf("%q: known %v", line, known)
		}
		if known && valid != (len(r.calls)%2 == 1) {
			t.Errorf("%q: valid %v is not the call's result", line, valid)
		}
	}
	want := "First Last Next Prev SeekGE(b) SeekLT(c d)"
	if got := strings.Join(r.calls, " "); got != want {
		t.Errorf("calls %q, want %q", got, want)
	}
}
