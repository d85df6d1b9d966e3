package bench

import (
	"fmt"
	"html"
	"strings"
)

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

// clientColumnNote explains the columns a client run fills differently
// from the engine mode.
const clientColumnNote = "thr is the number of connections. Latency is from a batch's write to each reply. " +
	"cpu/op and rss are the server's (read from /proc when it runs on this machine in another process); " +
	"the disk columns stay empty."

// clientMarkdown renders the run as results.md: what ran, where, and
// every row.
func clientMarkdown(rep *ClientReport) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`\n\n%s\n\nMachine: %s\n\n%s\n\n", rep.Meta.Command, clientSummary(rep), describeMachine(&rep.Meta), clientColumnNote)
	resultsTableMarkdown(&b, rep.Results)
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
		esc(clientSummary(rep)), esc(describeMachine(&rep.Meta)), esc(rep.Meta.Command), esc(clientColumnNote))
	chartsHTML(&b, rep.Results, "requests/s (higher is better)", func(r *Result) string { return fmt.Sprintf("c=%d", r.Threads) })
	b.WriteString("<h2>All results</h2>\n")
	resultsTableHTML(&b, rep.Results, false)
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}
