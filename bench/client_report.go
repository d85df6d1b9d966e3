package bench

import (
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
)

// writeClientFiles writes a client run's results.json, results.csv,
// results.md and report.html into dir: the engine mode's files, with the
// same CSV columns, so one script reads both.
func writeClientFiles(dir string, rep *ClientReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"results.json": append(js, '\n'),
		"results.csv":  resultsCSV(rep.Results),
		"results.md":   clientMarkdown(rep),
		"report.html":  clientHTML(rep),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// clientSummary is the sentence that says what a client run was.
func clientSummary(rep *ClientReport) string {
	c := rep.Config
	bound := fmt.Sprintf("%s per level", c.Duration)
	if c.Requests > 0 {
		bound = fmt.Sprintf("%d requests per level", c.Requests)
		if c.Duration > 0 {
			bound += fmt.Sprintf(" (at most %s)", c.Duration)
		}
	}
	return fmt.Sprintf("%s at %s; GET:SET %d:%d, pipeline %d, %d-byte keys, %d-byte values, %d keys (%s), %s.",
		rep.Target.describe(), c.Addr, c.ReadPercent, 100-c.ReadPercent, c.Pipeline, c.KeySize, c.ValueSize,
		c.Keyspace, c.Distribution, bound)
}

// clientMachine is the sentence that says where it ran.
func clientMachine(m *Meta) string {
	return fmt.Sprintf("%s, %d cores, %s memory, Linux %s, %s; load average at start %s; %s; took %.0f s.",
		m.CPU, m.Cores, fmtBytes(m.Memory), m.Kernel, m.GoVersion, m.LoadAvg, m.Start.UTC().Format("2006-01-02 15:04 MST"), m.Seconds)
}

// clientColumnNote explains the columns a client run fills differently
// from the engine mode.
const clientColumnNote = "thr is the number of connections. Latency is from a batch's write to each reply. " +
	"cpu/op and rss are the server's (read from /proc when it runs on this machine in another process); " +
	"the disk columns stay empty."

func clientMarkdown(rep *ClientReport) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`\n\n%s\n\nMachine: %s\n\n%s\n\n|", rep.Meta.Command, clientSummary(rep), clientMachine(&rep.Meta), clientColumnNote)
	for _, col := range columns {
		b.WriteString(" " + col.name + " |")
	}
	b.WriteString("\n|")
	for i, col := range columns {
		if col.width <= 0 || i < 2 {
			b.WriteString(" --- |")
		} else {
			b.WriteString(" ---: |")
		}
	}
	b.WriteString("\n")
	for i := range rep.Results {
		b.WriteString("|")
		for _, col := range columns {
			b.WriteString(" " + strings.ReplaceAll(col.cell(&rep.Results[i]), "|", "/") + " |")
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// clientHTML renders the run as one self-contained page like the engine
// mode's: throughput and p99 per connection count, then every row.
func clientHTML(rep *ClientReport) []byte {
	var b strings.Builder
	esc := html.EscapeString
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>lsmgo-bench client report</title><style>")
	b.WriteString(reportCSS)
	fmt.Fprintf(&b, "</style></head><body>\n<h1>lsmgo-bench: %s under load</h1>\n", esc(rep.Target.describe()))
	fmt.Fprintf(&b, "<p>%s</p>\n<p>%s</p>\n<p><code>%s</code></p>\n<p>%s</p>\n",
		esc(clientSummary(rep)), esc(clientMachine(&rep.Meta)), esc(rep.Meta.Command), esc(clientColumnNote))
	color := engineColors[rep.Target.Name]
	if color == "" {
		color = "#7f7f7f"
	}
	var ops, p99 []bar
	for _, r := range rep.Results {
		if r.Error != "" {
			continue
		}
		label := fmt.Sprintf("c=%d", r.Threads)
		ops = append(ops, bar{label: label, value: r.OpsPerSec, text: fmtCount(r.OpsPerSec), color: color})
		p99 = append(p99, bar{label: label, value: float64(r.P99Ns), text: fmtNanos(r.P99Ns), color: color})
	}
	b.WriteString("<div class=charts>")
	b.WriteString(svgBars("requests/s (higher is better)", ops))
	b.WriteString(svgBars("p99 latency (lower is better)", p99))
	b.WriteString("</div>\n<h2>All results</h2>\n<table><tr>")
	for i, col := range columns {
		cls := ""
		if col.width <= 0 || i < 2 {
			cls = " class=s"
		}
		fmt.Fprintf(&b, "<th%s>%s</th>", cls, esc(col.name))
	}
	b.WriteString("</tr>\n")
	for i := range rep.Results {
		r := &rep.Results[i]
		b.WriteString("<tr>")
		for j, col := range columns {
			cls := ""
			if col.width <= 0 || j < 2 {
				cls = " class=s"
			}
			fmt.Fprintf(&b, "<td%s>%s</td>", cls, esc(col.cell(r)))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n</body></html>\n")
	return []byte(b.String())
}
