package compaction

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output in testdata files")

// ddCase is one command of a datadriven script: a command line, optional
// input lines, and the expected output after "----", ended by a blank line.
type ddCase struct {
	line     int
	cmd      string
	fields   []string // the command line's words after cmd
	args     map[string]string
	input    string
	expected string
}

// runDataDriven runs every case of the script at path through fn, in order,
// and compares the output; with -rewrite it writes the actual outputs back.
func runDataDriven(t *testing.T, path string, fn func(t *testing.T, c *ddCase) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			out.WriteString(l)
			if i < len(lines)-1 {
				out.WriteByte('\n')
			}
			i++
			continue
		}
		c := &ddCase{line: i + 1, args: map[string]string{}}
		fields := strings.Fields(l)
		c.cmd, c.fields = fields[0], fields[1:]
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			c.args[k] = v
		}
		out.WriteString(l + "\n")
		i++
		var input []string
		for ; i < len(lines) && lines[i] != "----"; i++ {
			input = append(input, lines[i])
			out.WriteString(lines[i] + "\n")
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: missing ----", path, c.line)
		}
		i++
		var expected []string
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			expected = append(expected, lines[i])
		}
		c.input = strings.Join(input, "\n")
		c.expected = strings.Join(expected, "\n")
		actual := strings.TrimRight(fn(t, c), "\n")
		out.WriteString("----\n")
		if actual != "" {
			out.WriteString(actual + "\n")
		}
		if !*rewrite && actual != c.expected {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, c.line, l, actual, c.expected)
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
