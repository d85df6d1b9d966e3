package bench

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"
)

// printer writes the result table to stdout and the live progress line to
// stderr. Both often go to one terminal, so a row or a child's stderr
// output first erases the progress line.
type printer struct {
	mu       sync.Mutex
	out, err io.Writer
	live     bool // draw the progress line
	shown    bool // a progress line is on screen
	lastDraw time.Time
}

// newPrinter returns a printer whose progress line is drawn when mode is
// "on", or "auto" and stderr is a terminal: in a file or a pipe the
// carriage returns that redraw it would be noise.
func newPrinter(stdout, stderr io.Writer, mode string) *printer {
	live := mode == "on"
	if mode == "auto" {
		if f, ok := stderr.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				live = true
			}
		}
	}
	return &printer{out: stdout, err: stderr, live: live}
}

// column is one column of the result table, in every format the table is
// written in: the terminal, results.md and report.html.
type column struct {
	name string
	// width is the terminal width; negative left-aligns, 0 leaves the
	// last column unpadded.
	width int
	cell  func(r *Result) string
}

// text reports whether the column holds words rather than numbers, which
// every format aligns left.
func (c column) text() bool { return c.width <= 0 }

// columns are the table's columns, in order.
var columns = []column{
	{"workload", -16, func(r *Result) string { return r.Workload }},
	{"engine", -9, func(r *Result) string { return r.Engine }},
	{"thr", 3, func(r *Result) string { return fmt.Sprint(r.Threads) }},
	{"ops/s", 8, func(r *Result) string { return fmtCount(r.OpsPerSec) }},
	{"MB/s", 7, func(r *Result) string { return fmt.Sprintf("%.1f", r.MBPerSec) }},
	{"p50", 7, func(r *Result) string { return fmtNanos(r.P50Ns) }},
	{"p99", 7, func(r *Result) string { return fmtNanos(r.P99Ns) }},
	{"p99.9", 7, func(r *Result) string { return fmtNanos(r.P999Ns) }},
	{"max", 7, func(r *Result) string { return fmtNanos(r.MaxNs) }},
	{"cpu/op", 7, func(r *Result) string { return fmtNanos(r.cpuPerOp()) }},
	{"written", 8, func(r *Result) string { return fmtBytes(r.DiskBytesWritten) }},
	{"w-amp", 5, func(r *Result) string { return fmtRatio(r.WriteAmp) }},
	{"disk", 7, func(r *Result) string { return fmtBytes(r.DiskBytes) }},
	{"s-amp", 5, func(r *Result) string { return fmtRatio(r.SpaceAmp) }},
	{"rss", 7, func(r *Result) string { return fmtBytes(r.PeakRSS) }},
	{"note", 0, rowNote},
}

// rowNote carries what a row's numbers cannot: errors, reads that missed,
// the writer's rate.
func rowNote(r *Result) string {
	if r.Error != "" {
		return "ERROR: " + r.Error
	}
	var parts []string
	if r.WriterOpsPerSec > 0 {
		parts = append(parts, "writer "+fmtCount(r.WriterOpsPerSec)+" ops/s")
	}
	switch r.Workload {
	case "readrandom", "readwhilewriting", "readmissing", "mixed", "seekrandom":
		parts = append(parts, fmt.Sprintf("found %d", r.Found))
	default:
		if d := workloads[r.Workload]; d != nil && d.mix != nil {
			parts = append(parts, fmt.Sprintf("found %d", r.Found))
		}
	}
	if r.Runs > 1 {
		parts = append(parts, fmt.Sprintf("median of %d runs, %s-%s", r.Runs, fmtCount(r.OpsPerSecMin), fmtCount(r.OpsPerSecMax)))
	}
	if r.Prefilled {
		parts = append(parts, "after an unmeasured fillrandom")
	}
	if r.Note != "" {
		parts = append(parts, r.Note)
	}
	return strings.Join(parts, "; ")
}

// formatRow lays cells, one per column, out at the columns' widths.
func formatRow(cells []string) string {
	var b strings.Builder
	for i, c := range columns {
		if i > 0 {
			b.WriteString(" ")
		}
		if c.width == 0 {
			b.WriteString(cells[i])
		} else {
			fmt.Fprintf(&b, "%*s", c.width, cells[i])
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// headerLine is the terminal table's line of column names.
func headerLine() string {
	names := make([]string, len(columns))
	for i, c := range columns {
		names[i] = c.name
	}
	return formatRow(names)
}

// rowLine is r as a line of the terminal table.
func rowLine(r *Result) string {
	cells := make([]string, len(columns))
	for i, c := range columns {
		cells[i] = c.cell(r)
	}
	return formatRow(cells)
}

// header prints the engine mode's settings and the column names.
func (p *printer) header(c *Config) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "lsmgo-bench engine mode: num=%d keys=%dB values=%dB compressibility=%g distribution=%s cache=%s seed=%d",
		c.Num, c.KeySize, c.ValueSize, c.Compressibility, c.Distribution, fmtBytes(c.CacheSize), c.Seed)
	if c.Duration > 0 {
		fmt.Fprintf(p.out, " duration=%s", c.Duration)
	}
	if c.WriterRate > 0 {
		fmt.Fprintf(p.out, " writer-rate=%d/s", c.WriterRate)
	}
	if c.Runs > 1 {
		fmt.Fprintf(p.out, " runs=%d", c.Runs)
	}
	fmt.Fprintf(p.out, "\nengines: %s\n\n", strings.Join(c.Engines, ", "))
	fmt.Fprintln(p.out, headerLine())
}

// row prints one finished row under the header.
func (p *printer) row(r Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	fmt.Fprintln(p.out, rowLine(&r))
}

// medianTable prints the median rows after the rows of every run.
func (p *printer) medianTable(rows []Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	fmt.Fprintf(p.out, "\nmedians\n%s\n", headerLine())
	for i := range rows {
		fmt.Fprintln(p.out, rowLine(&rows[i]))
	}
}

// progressRedraw bounds how often the progress line is redrawn.
const progressRedraw = 200 * time.Millisecond

// progress redraws the progress line, at most every progressRedraw:
// children report more often than a terminal is worth redrawing.
func (p *printer) progress(pr progress) {
	if !p.live {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.lastDraw) < progressRedraw {
		return
	}
	p.lastDraw = time.Now()
	what := pr.Workload
	if pr.Phase != "" {
		what += " (" + pr.Phase + ")"
	}
	rate := 0.0
	if pr.Elapsed > 0 {
		rate = float64(pr.Done) / pr.Elapsed
	}
	line := fmt.Sprintf("  [%s] %s: %d ops", pr.Engine, what, pr.Done)
	if pr.Total > 0 {
		line += fmt.Sprintf(" of %d (%.0f%%)", pr.Total, 100*float64(pr.Done)/float64(pr.Total))
	}
	line += fmt.Sprintf(", %s ops/s, %.1fs", fmtCount(rate), pr.Elapsed)
	fmt.Fprintf(p.err, "\r\033[K%s", line)
	p.shown = true
}

// clearLocked erases the progress line, if one is shown; p.mu is held.
func (p *printer) clearLocked() {
	if p.shown {
		fmt.Fprint(p.err, "\r\033[K")
		p.shown = false
	}
}

// clearProgress erases the progress line once the last row is in.
func (p *printer) clearProgress() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
}

// stderrWriter is where children's own stderr goes: the printer's stderr,
// with the progress line erased first.
func (p *printer) stderrWriter() io.Writer { return stderrRelay{p} }

// stderrRelay is the io.Writer of stderrWriter.
type stderrRelay struct{ p *printer }

func (s stderrRelay) Write(b []byte) (int, error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.p.clearLocked()
	return s.p.err.Write(b)
}

// fmtCount prints a rate with a k or M suffix.
func fmtCount(v float64) string {
	switch {
	case v <= 0:
		return "-"
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// fmtNanos prints a latency with three significant digits at most.
func fmtNanos(ns int64) string {
	if ns <= 0 {
		return "-"
	}
	v := float64(ns)
	unit := "ns"
	for _, u := range []string{"µs", "ms", "s"} {
		if v < 1000 {
			break
		}
		v /= 1000
		unit = u
	}
	switch {
	case v >= 100 || unit == "ns":
		return fmt.Sprintf("%.0f%s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f%s", v, unit)
	}
	return fmt.Sprintf("%.2f%s", v, unit)
}

// fmtBytes prints a size in binary units.
func fmtBytes(n int64) string {
	switch {
	case n <= 0:
		return "-"
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// fmtRatio prints an amplification or a ratio, or "-" where there is none
// (no bytes written, nothing live).
func fmtRatio(v float64) string {
	if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}
