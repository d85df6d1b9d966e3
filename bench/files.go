package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// writeReportFiles writes the files a run leaves in --out, the same four
// in both modes so one script reads either: rep as results.json, the rows
// as results.csv, and the rendered results.md and report.html.
func writeReportFiles(dir string, rep any, rows []Result, markdown, page []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
	}{
		{"results.json", append(js, '\n')},
		{"results.csv", resultsCSV(rows)},
		{"report.html", page},
		{"results.md", markdown},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// csvHeader names the columns of results.csv, in the order csvRow fills
// them.
var csvHeader = []string{
	"run", "step", "workload", "engine", "threads", "ops", "seconds", "ops_per_sec", "mb_per_sec",
	"p50_ns", "p99_ns", "p999_ns", "max_ns", "mean_ns", "cpu_seconds", "found", "writer_ops_per_sec",
	"user_bytes_written", "disk_bytes_written", "syscall_bytes_written", "write_amp", "disk_bytes", "live_bytes", "space_amp",
	"peak_rss", "prefilled", "note", "error",
}

// csvRow is r as a row of results.csv: every field, unformatted.
func csvRow(r *Result) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []string{
		strconv.Itoa(r.Run), strconv.Itoa(r.Step), r.Workload, r.Engine, strconv.Itoa(r.Threads), i(r.Ops), f(r.Seconds), f(r.OpsPerSec), f(r.MBPerSec),
		i(r.P50Ns), i(r.P99Ns), i(r.P999Ns), i(r.MaxNs), f(r.MeanNs), f(r.CPUSeconds), i(r.Found), f(r.WriterOpsPerSec),
		i(r.UserBytesWritten), i(r.DiskBytesWritten), i(r.SyscallBytesWritten), f(r.WriteAmp), i(r.DiskBytes), i(r.LiveBytes), f(r.SpaceAmp),
		i(r.PeakRSS), strconv.FormatBool(r.Prefilled), r.Note, r.Error,
	}
}

// resultsCSV renders results as results.csv.
func resultsCSV(results []Result) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(csvHeader)
	for i := range results {
		_ = w.Write(csvRow(&results[i]))
	}
	w.Flush()
	return b.Bytes()
}

// engineColors gives every engine the same color in every chart; lsmgo's
// stands out.
var engineColors = map[string]string{
	"lsmgo":     "#d62728",
	"pebble":    "#1f77b4",
	"badger":    "#9467bd",
	"bbolt":     "#2ca02c",
	"goleveldb": "#ff7f0e",
	"rocksdb":   "#8c564b",
}

// engineColor is name's color in the charts: its own, or grey for a name
// engineColors lacks (a client run's "unknown" server).
func engineColor(name string) string {
	if c, ok := engineColors[name]; ok {
		return c
	}
	return "#7f7f7f"
}

// bar is one bar of a chart.
type bar struct {
	label, text string
	value       float64
	color       string
}

// svgBars draws a horizontal bar chart as inline SVG.
func svgBars(title string, bars []bar) string {
	const (
		width    = 440
		labelW   = 80
		textW    = 70
		rowH     = 20
		titleH   = 22
		barSpace = width - labelW - textW
	)
	var maxV float64
	for _, b := range bars {
		maxV = max(maxV, b.value)
	}
	h := titleH + rowH*len(bars) + 6
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s">`, width, h, html.EscapeString(title))
	// Presentation attributes rather than CSS, so a chart copied out of
	// the page renders the same anywhere.
	fmt.Fprintf(&s, `<text x="0" y="15" font-family="sans-serif" font-size="13" font-weight="bold">%s</text>`, html.EscapeString(title))
	for i, b := range bars {
		y := titleH + i*rowH
		w := 0.0
		if maxV > 0 {
			w = b.value / maxV * barSpace
		}
		fmt.Fprintf(&s, `<text x="%d" y="%d" font-family="sans-serif" font-size="12" text-anchor="end">%s</text>`, labelW-6, y+14, html.EscapeString(b.label))
		fmt.Fprintf(&s, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`, labelW, y+3, w, rowH-6, b.color)
		fmt.Fprintf(&s, `<text x="%.1f" y="%d" font-family="sans-serif" font-size="11">%s</text>`, float64(labelW)+w+4, y+14, html.EscapeString(b.text))
	}
	s.WriteString(`</svg>`)
	return s.String()
}

// chartsHTML draws the throughput and p99 charts of the rows without an
// error, one bar a row, labelled by label.
func chartsHTML(b *strings.Builder, rows []Result, opsTitle string, label func(r *Result) string) {
	var ops, p99 []bar
	for i := range rows {
		r := &rows[i]
		if r.Error != "" {
			continue
		}
		l, color := label(r), engineColor(r.Engine)
		ops = append(ops, bar{label: l, value: r.OpsPerSec, text: fmtCount(r.OpsPerSec), color: color})
		p99 = append(p99, bar{label: l, value: float64(r.P99Ns), text: fmtNanos(r.P99Ns), color: color})
	}
	b.WriteString("<div class=charts>")
	b.WriteString(svgBars(opsTitle, ops))
	b.WriteString(svgBars("p99 latency (lower is better)", p99))
	b.WriteString("</div>\n")
}

// htmlClass is the class attribute of the column's cells: reportCSS
// aligns text columns left.
func (c column) htmlClass() string {
	if c.text() {
		return " class=s"
	}
	return ""
}

// resultsTableHTML writes rows as an HTML table with the terminal table's
// columns. perRun adds what the engine mode's table of every run needs: a
// leading run column, and each row classed by its engine so that
// reportCSS picks out lsmgo's rows among its peers'.
func resultsTableHTML(b *strings.Builder, rows []Result, perRun bool) {
	esc := html.EscapeString
	b.WriteString("<table><tr>")
	if perRun {
		b.WriteString("<th>run</th>")
	}
	for _, col := range columns {
		fmt.Fprintf(b, "<th%s>%s</th>", col.htmlClass(), esc(col.name))
	}
	b.WriteString("</tr>\n")
	for i := range rows {
		r := &rows[i]
		if perRun {
			fmt.Fprintf(b, "<tr class=%q><td>%d</td>", r.Engine, r.Run)
		} else {
			b.WriteString("<tr>")
		}
		for _, col := range columns {
			fmt.Fprintf(b, "<td%s>%s</td>", col.htmlClass(), esc(col.cell(r)))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}

// resultsTableMarkdown writes rows as a Markdown table with the terminal
// table's columns. A | in a cell (a note, an error) becomes /, since
// Markdown has no escape for it that every renderer honours.
func resultsTableMarkdown(b *strings.Builder, rows []Result) {
	b.WriteString("|")
	for _, col := range columns {
		b.WriteString(" " + col.name + " |")
	}
	b.WriteString("\n|")
	for _, col := range columns {
		if col.text() {
			b.WriteString(" --- |")
		} else {
			b.WriteString(" ---: |")
		}
	}
	b.WriteString("\n")
	for i := range rows {
		b.WriteString("|")
		for _, col := range columns {
			b.WriteString(" " + strings.ReplaceAll(col.cell(&rows[i]), "|", "/") + " |")
		}
		b.WriteString("\n")
	}
}

// describeMachine is the sentence that says where a run ran and how long
// it took.
func describeMachine(m *Meta) string {
	return fmt.Sprintf("%s, %d cores, %s memory, Linux %s, %s; load average at start %s; %s; took %.0f s.",
		m.CPU, m.Cores, fmtBytes(m.Memory), m.Kernel, m.GoVersion, m.LoadAvg, m.Start.UTC().Format("2006-01-02 15:04 MST"), m.Seconds)
}

// reportCSS styles both modes' report.html.
const reportCSS = `body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}td.s,th.s{text-align:left}
tr.lsmgo td{background:#fff0f0}.charts{display:flex;flex-wrap:wrap;gap:2em}
.err{color:#b00}dl dt{font-weight:600;margin-top:.4em}dl dd{margin-left:1em;font-size:.9em}`

// reportHTML renders the report as one self-contained page: inline CSS and
// SVG, no scripts, nothing fetched.
func reportHTML(rep *Report) []byte {
	var b strings.Builder
	esc := html.EscapeString
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>lsmgo-bench engine report</title><style>")
	b.WriteString(reportCSS)
	b.WriteString("</style></head><body>\n<h1>lsmgo-bench: engines side by side</h1>\n")
	m := rep.Meta
	c := rep.Config
	fmt.Fprintf(&b, "<p>%s, %d cores, %s memory, Linux %s, %s; load average at start %s; started %s, took %.0f s.</p>\n",
		esc(m.CPU), m.Cores, fmtBytes(m.Memory), esc(m.Kernel), esc(m.GoVersion), esc(m.LoadAvg),
		m.Start.Format("2006-01-02 15:04:05 MST"), m.Seconds)
	fmt.Fprintf(&b, "<p><code>%s</code></p>\n", esc(m.Command))
	fmt.Fprintf(&b, "<p>%d keys, %d-byte keys, %d-byte values (compressibility %g), %s distribution, %s block cache, seed %d.</p>\n",
		c.Num, c.KeySize, c.ValueSize, c.Compressibility, esc(string(c.Distribution)), fmtBytes(c.CacheSize), c.Seed)

	if len(rep.Comparisons) > 0 {
		b.WriteString("<h2>lsmgo against the best peer</h2>\n<table><tr><th class=s>workload</th><th>threads</th><th>lsmgo ops/s</th><th class=s>best peer</th><th>peer ops/s</th><th>ratio</th><th>lsmgo p99</th><th>peer p99</th><th>p99 ratio</th><th>lsmgo cpu/op</th><th>peer cpu/op</th></tr>\n")
		for _, x := range rep.Comparisons {
			fmt.Fprintf(&b, "<tr><td class=s>%s</td><td>%d</td><td>%s</td><td class=s>%s</td><td>%s</td><td>%.2f</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
				esc(x.Workload), x.Threads, fmtCount(x.LsmgoOpsPerSec), esc(x.BestPeer), fmtCount(x.PeerOpsPerSec),
				x.Ratio, fmtNanos(x.LsmgoP99Ns), fmtNanos(x.PeerP99Ns), fmtRatio(x.P99Ratio),
				fmtNanos(x.LsmgoCPUPerOpNs), fmtNanos(x.PeerCPUPerOpNs))
		}
		b.WriteString("</table>\n")
	}

	b.WriteString("<h2>Workloads</h2>\n")
	for step, w := range c.Workloads {
		var rows []Result
		for _, r := range rep.Medians {
			if r.Step == step {
				rows = append(rows, r)
			}
		}
		fmt.Fprintf(&b, "<h3>%s, %d thread(s)</h3><p>%s</p>\n", esc(w.Name), c.threads(w), esc(rep.Workloads[w.Name]))
		chartsHTML(&b, rows, "ops/s (higher is better)", func(r *Result) string { return r.Engine })
		for _, r := range rows {
			if r.Error != "" {
				fmt.Fprintf(&b, "<p class=err>%s: %s</p>\n", esc(r.Engine), esc(r.Error))
			}
		}
	}

	b.WriteString("<h2>Disk and memory</h2>\n<table><tr><th class=s>engine</th><th>write amp fillrandom+overwrite</th><th>space amp after fill</th><th>space amp after overwrite</th><th>peak RSS</th></tr>\n")
	for _, s := range rep.Engines {
		fmt.Fprintf(&b, "<tr><td class=s>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			esc(s.Engine), fmtRatio(s.WriteAmpFillOverwrite), fmtRatio(s.SpaceAmpFill), fmtRatio(s.SpaceAmpOverwrite), fmtBytes(s.PeakRSS))
	}
	b.WriteString("</table>\n<h2>All results</h2>\n")
	if c.Runs > 1 {
		fmt.Fprintf(&b, "<p>Charts and comparisons use the median of %d runs; the table has every run.</p>\n", c.Runs)
	}
	resultsTableHTML(&b, rep.Results, true)
	b.WriteString("<h2>Engine settings</h2>\n<dl>")
	names := make([]string, 0, len(rep.Settings))
	for n := range rep.Settings {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := rep.Settings[n]
		if mod := moduleOf(n, m.Modules); mod != "" {
			v = mod + ": " + v
		} else if n == rocksdbName && m.DBBench != "" {
			v = m.DBBench + ": " + v
		}
		fmt.Fprintf(&b, "<dt>%s</dt><dd>%s</dd>", esc(n), esc(v))
	}
	b.WriteString("</dl>\n</body></html>\n")
	return []byte(b.String())
}

// moduleOf names the Go module and version an engine came from.
func moduleOf(engine string, modules map[string]string) string {
	for path, v := range modules {
		if strings.Contains(path, engine) {
			return path + " " + v
		}
	}
	return ""
}

// reportMarkdown renders the median rows, the comparisons and the engine
// summaries as Markdown tables, ready to paste into BENCHMARKS.md.
func reportMarkdown(rep *Report) []byte {
	var b strings.Builder
	m, c := rep.Meta, rep.Config
	fmt.Fprintf(&b, "Command: `%s`\n\n", m.Command)
	fmt.Fprintf(&b, "Machine: %s\n\n", describeMachine(&m))
	if c.Runs > 1 {
		fmt.Fprintf(&b, "Each row is the median of %d runs (engine order reversed every other run).\n\n", c.Runs)
	}
	resultsTableMarkdown(&b, rep.Medians)
	if len(rep.Comparisons) > 0 {
		b.WriteString("\n| workload | threads | lsmgo ops/s | best peer | peer ops/s | ratio | lsmgo p99 | peer p99 | p99 ratio | lsmgo cpu/op | peer cpu/op |\n")
		b.WriteString("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, x := range rep.Comparisons {
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %.2f | %s | %s | %s | %s | %s |\n",
				x.Workload, x.Threads, fmtCount(x.LsmgoOpsPerSec), x.BestPeer, fmtCount(x.PeerOpsPerSec), x.Ratio,
				fmtNanos(x.LsmgoP99Ns), fmtNanos(x.PeerP99Ns), fmtRatio(x.P99Ratio), fmtNanos(x.LsmgoCPUPerOpNs), fmtNanos(x.PeerCPUPerOpNs))
		}
	}
	b.WriteString("\n| engine | write amp fillrandom+overwrite | space amp after fill | space amp after overwrite | peak RSS |\n| --- | ---: | ---: | ---: | ---: |\n")
	for _, s := range rep.Engines {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", s.Engine, fmtRatio(s.WriteAmpFillOverwrite),
			fmtRatio(s.SpaceAmpFill), fmtRatio(s.SpaceAmpOverwrite), fmtBytes(s.PeakRSS))
	}
	return []byte(b.String())
}
