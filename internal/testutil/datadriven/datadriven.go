// Package datadriven runs test scripts kept as text files in a package's
// testdata directory. A script is a sequence of cases:
//
//	# a comment line, kept as is
//	command arg1 key=value ...
//	input line
//	input line
//	----
//	expected output line
//	expected output line
//
// A case ends at the first blank line after its "----". The test supplies
// one callback that runs a case and returns its actual output; the runner
// compares it with the expected lines. Run a package's tests with -rewrite
// to write the actual outputs back into its scripts instead, then read the
// diff before committing it: a rewritten script is only as right as the
// reader who checked it.
//
// Because a case ends at a blank line, an output may not contain one; the
// runner reports such an output as a failure rather than write a script it
// could not read back.
package datadriven

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// rewrite is registered by every test binary that imports this package, so
// pass it only to such packages: go test ./internal/iter -rewrite.
var rewrite = flag.Bool("rewrite", false, "rewrite the expected outputs of datadriven scripts with the actual ones")

// Case is one command of a script.
type Case struct {
	// Pos is "file:line" of the command line, for messages.
	Pos string
	// Cmd is the command line's first word.
	Cmd string
	// Fields are the command line's remaining words, in order.
	Fields []string
	// Input is the text between the command line and "----", without its
	// final newline; empty when there is none.
	Input string
	// Expected is the output the script records, without a final newline.
	Expected string
}

// Arg returns the value of the field key=value, or of a bare field key
// (with value ""); ok is false when neither is present.
func (c *Case) Arg(key string) (value string, ok bool) {
	for _, f := range c.Fields {
		k, v, _ := strings.Cut(f, "=")
		if k == key {
			return v, true
		}
	}
	return "", false
}

// HasArg reports whether key appears as a field, bare or with a value.
func (c *Case) HasArg(key string) bool {
	_, ok := c.Arg(key)
	return ok
}

// IntArg returns the integer value of key=value, or def when key is
// absent; a value that is not an integer fails t.
func (c *Case) IntArg(t testing.TB, key string, def int) int {
	t.Helper()
	s, ok := c.Arg(key)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		c.Fatalf(t, "bad %s=%q: %v", key, s, err)
	}
	return n
}

// Fatalf fails t with a message that names the case's position.
func (c *Case) Fatalf(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Fatalf("%s: %s: %s", c.Pos, c.Cmd, fmt.Sprintf(format, args...))
}

// RunFile runs every case of the script at path through run, in order,
// and fails t for each output that differs from the script's; with
// -rewrite it writes the actual outputs back to the file instead. A
// script without a case fails, so that an emptied file cannot pass.
func RunFile(t testing.TB, path string, run func(t testing.TB, c *Case) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var out strings.Builder
	cases := 0
	for i := 0; i < len(lines); {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			out.WriteString(l + "\n")
			i++
			continue
		}
		fields := strings.Fields(l)
		c := &Case{Pos: fmt.Sprintf("%s:%d", path, i+1), Cmd: fields[0], Fields: fields[1:]}
		out.WriteString(l + "\n")
		i++
		start := i
		for i < len(lines) && lines[i] != "----" {
			out.WriteString(lines[i] + "\n")
			i++
		}
		if i == len(lines) {
			t.Fatalf("%s: no ---- after the command", c.Pos)
		}
		c.Input = strings.Join(lines[start:i], "\n")
		i++
		start = i
		for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
			i++
		}
		c.Expected = strings.Join(lines[start:i], "\n")
		cases++

		actual := strings.TrimRight(run(t, c), "\n")
		if strings.Contains(actual, "\n\n") || strings.HasPrefix(actual, "\n") {
			t.Errorf("%s: %s: the output has a blank line, which would end the case early:\n%s", c.Pos, l, actual)
		}
		out.WriteString("----\n")
		if actual != "" {
			out.WriteString(actual + "\n")
		}
		if !*rewrite && actual != c.Expected {
			t.Errorf("%s: %s\ngot:\n%s\nwant:\n%s", c.Pos, l, actual, c.Expected)
		}
	}
	if cases == 0 {
		t.Errorf("%s: the script has no case", path)
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Positioner is what a script moves in an iterator: the engine's public
// Iterator and its internal iterators both have it.
type Positioner interface {
	First() bool
	Last() bool
	Next() bool
	Prev() bool
	SeekGE(key []byte) bool
	SeekLT(key []byte) bool
}

// Position applies one script line naming a positioning call ("first",
// "last", "next", "prev", "seek-ge KEY", "seek-lt KEY") to it and returns
// the call's result; known is false, and nothing is called, for any other
// line.
func Position(it Positioner, line string) (valid, known bool) {
	op, arg, _ := strings.Cut(line, " ")
	switch op {
	case "first":
		return it.First(), true
	case "last":
		return it.Last(), true
	case "next":
		return it.Next(), true
	case "prev":
		return it.Prev(), true
	case "seek-ge":
		return it.SeekGE([]byte(arg)), true
	case "seek-lt":
		return it.SeekLT([]byte(arg)), true
	}
	return false, false
}
