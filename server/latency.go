package server

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// The latency monitor (LATENCY): with latency-monitor-threshold set, each
// command that runs at least that long is a sample of the event
// "command", or "fast-command" for a command flagged fast, as in Redis.
// Each event keeps its latest latencySamples samples, one a second (the
// worst of that second), and its all-time worst. Redis' other events
// (fork, AOF fsync, expire and eviction cycles) have no counterpart: the
// engine's stalls and syncs happen inside commands, whose samples they
// lengthen.
const latencySamples = 160

type latencySample struct {
	at int64 // Unix seconds
	ms int64
}

type latencySeries struct {
	samples []latencySample // ring, oldest at next once full
	next    int
	worst   int64
}

type latencyMonitor struct {
	mu     sync.Mutex
	events map[string]*latencySeries
}

func (lm *latencyMonitor) addCommand(cmd *command, d time.Duration) {
	event := "command"
	if cmd.flags&flagFast != 0 {
		event = "fast-command"
	}
	lm.add(event, time.Now().Unix(), d.Milliseconds())
}

func (lm *latencyMonitor) add(event string, at, ms int64) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	if lm.events == nil {
		lm.events = map[string]*latencySeries{}
	}
	s := lm.events[event]
	if s == nil {
		s = &latencySeries{}
		lm.events[event] = s
	}
	s.worst = max(s.worst, ms)
	if n := len(s.samples); n > 0 {
		// next stays 0 until the ring is full, so this is the newest.
		if last := &s.samples[(s.next+n-1)%n]; last.at == at {
			last.ms = max(last.ms, ms)
			return
		}
	}
	if len(s.samples) < latencySamples {
		s.samples = append(s.samples, latencySample{at, ms})
		return
	}
	s.samples[s.next] = latencySample{at, ms}
	s.next = (s.next + 1) % latencySamples
}

// history returns event's samples, oldest first.
func (lm *latencyMonitor) history(event string) []latencySample {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	s := lm.events[event]
	if s == nil {
		return nil
	}
	return append(slices.Clone(s.samples[s.next:]), s.samples[:s.next]...)
}

// latest returns, per event in name order, its newest sample and worst.
func (lm *latencyMonitor) latest() (names []string, last []latencySample, worst []int64) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	for name := range lm.events {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		s := lm.events[name]
		n := len(s.samples)
		last, worst = append(last, s.samples[(s.next+n-1)%n]), append(worst, s.worst)
	}
	return names, last, worst
}

// reset forgets the events named, or all for none, and returns how many
// it forgot.
func (lm *latencyMonitor) reset(events [][]byte) int {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	if len(events) == 0 {
		n := len(lm.events)
		lm.events = nil
		return n
	}
	n := 0
	for _, e := range events {
		if _, ok := lm.events[string(e)]; ok {
			delete(lm.events, string(e))
			n++
		}
	}
	return n
}

func init() {
	register(spec{name: "latency", arity: -2, group: "server", since: "2.8.13", summary: "A container for latency diagnostics commands.",
		subs: []spec{
			{name: "latest", arity: 2, flags: flagAdmin, since: "2.8.13", summary: "Returns the latest latency samples for all events.", run: cmdLatencyLatest},
			{name: "history", arity: 3, flags: flagAdmin, since: "2.8.13", summary: "Returns timestamp-latency samples for an event.", run: cmdLatencyHistory},
			{name: "reset", arity: -2, flags: flagAdmin, since: "2.8.13", summary: "Resets the latency data for one or more events.", run: cmdLatencyReset},
			{name: "doctor", arity: 2, flags: flagAdmin, since: "2.8.13", summary: "Returns a human-readable latency analysis report.", run: cmdLatencyDoctor},
			{name: "graph", arity: 3, flags: flagAdmin, since: "2.8.13", summary: "Returns a latency graph for an event.", run: cmdLatencyGraph},
			{name: "histogram", arity: -2, flags: flagAdmin, since: "7.0.0", summary: "Returns the cumulative distribution of latencies of a subset or all commands.", run: cmdLatencyHistogram},
			{name: "help", arity: 2, since: "2.8.13", summary: "Returns helpful text about the different subcommands.", run: cmdHelp},
		}})
}

func cmdLatencyLatest(c *conn, _ *command, _ [][]byte) error {
	names, last, worst := c.s.latency.latest()
	c.wr.ArrayHeader(len(names))
	for i, name := range names {
		c.wr.ArrayHeader(4)
		c.wr.BulkString(name)
		c.wr.Int(last[i].at)
		c.wr.Int(last[i].ms)
		c.wr.Int(worst[i])
	}
	return nil
}

func cmdLatencyHistory(c *conn, _ *command, args [][]byte) error {
	samples := c.s.latency.history(string(args[2]))
	c.wr.ArrayHeader(len(samples))
	for _, s := range samples {
		c.wr.ArrayHeader(2)
		c.wr.Int(s.at)
		c.wr.Int(s.ms)
	}
	return nil
}

func cmdLatencyReset(c *conn, _ *command, args [][]byte) error {
	c.wr.Int(int64(c.s.latency.reset(args[2:])))
	return nil
}

// cmdLatencyDoctor reports each event's samples and worst case, and what
// to look at for this server's kind of latency.
func cmdLatencyDoctor(c *conn, _ *command, _ [][]byte) error {
	var b bytes.Buffer
	threshold := c.s.config().LatencyMonitorThreshold
	names, _, worst := c.s.latency.latest()
	switch {
	case threshold == 0:
		b.WriteString("The latency monitor is off: CONFIG SET latency-monitor-threshold <milliseconds> turns it on.\n")
	case len(names) == 0:
		fmt.Fprintf(&b, "No command has run for %d ms or longer since the monitor started or was reset.\n", threshold.Milliseconds())
	}
	for i, name := range names {
		h := c.s.latency.history(name)
		var sum int64
		for _, s := range h {
			sum += s.ms
		}
		fmt.Fprintf(&b, "%s: %d latency spikes (average %d ms, worst %d ms).\n", name, len(h), sum/int64(len(h)), worst[i])
	}
	if len(names) > 0 {
		b.WriteString("Slow commands here are most often large collection reads, disk reads missing the block cache, or writes stalled behind compaction: see SLOWLOG GET and INFO's lsmgo fields.\n")
	}
	c.wr.Bulk(b.Bytes())
	return nil
}

// cmdLatencyHistogram implements LATENCY HISTOGRAM [command ...]: per
// command with samples (all, or those named, a container with its
// subcommands), its calls and cumulative distribution (hdrDistribution).
// Unknown names are skipped, as in Redis.
func cmdLatencyHistogram(c *conn, _ *command, args [][]byte) error {
	c.publish() // the commands before it in a pipeline count
	var cmds []*command
	if len(args) == 2 {
		cmds = allCommands
	} else {
		for _, name := range args[2:] {
			cmd := commandByFullName(name)
			if cmd == nil {
				continue
			}
			cmds = append(append(cmds, cmd), cmd.sortedSubs()...)
		}
	}
	type entry struct {
		cmd   *command
		total uint64
		steps []hdrStep
	}
	var out []entry
	for _, cmd := range cmds {
		if h := c.s.cmdStats[cmd.id].hist.Load(); h != nil {
			counts, total := h.snapshot()
			out = append(out, entry{cmd, total, hdrDistribution(counts, total)})
		}
	}
	c.wr.MapHeader(len(out))
	for _, e := range out {
		c.wr.BulkString(e.cmd.name)
		c.wr.MapHeader(2)
		c.wr.BulkString("calls")
		c.wr.Int(int64(e.total))
		c.wr.BulkString("histogram_usec")
		c.wr.MapHeader(len(e.steps))
		for _, s := range e.steps {
			c.wr.Int(int64(s.usec))
			c.wr.Int(int64(s.count))
		}
	}
	return nil
}

// commandByFullName finds a command by its case-insensitive name, or a
// subcommand by "container|sub".
func commandByFullName(name []byte) *command {
	base, sub, isSub := strings.Cut(strings.ToLower(string(name)), "|")
	cmd := commands[base]
	if cmd == nil || !isSub {
		return cmd
	}
	return cmd.subs[sub]
}

// cmdLatencyGraph implements LATENCY GRAPH event: Redis' ASCII art of
// the event's samples (latencyGraph).
func cmdLatencyGraph(c *conn, _ *command, args [][]byte) error {
	event := string(args[2])
	samples := c.s.latency.history(event)
	if len(samples) == 0 {
		return redisError(fmt.Sprintf("ERR No samples available for event '%s'", event))
	}
	names, _, worst := c.s.latency.latest()
	c.wr.Verbatim("txt", latencyGraph(event, samples, worst[slices.Index(names, event)], time.Now().Unix()))
	return nil
}

// latencyGraph draws samples as Redis' LATENCY GRAPH does: a title line,
// a rule, then per 80 samples a four-row sparkline (characters "_o#" in
// three steps a row, '|' below the top) and under each column its age
// ("12s", "5m", "3h", "2d") written downwards.
func latencyGraph(event string, samples []latencySample, worst, now int64) string {
	const cols, rows = 80, 4
	const charset = "_o#"
	lo, hi := samples[0].ms, samples[0].ms
	labels := make([]string, len(samples))
	for i, s := range samples {
		lo, hi = min(lo, s.ms), max(hi, s.ms)
		switch age := now - s.at; {
		case age < 60:
			labels[i] = fmt.Sprintf("%ds", age)
		case age < 3600:
			labels[i] = fmt.Sprintf("%dm", age/60)
		case age < 86400:
			labels[i] = fmt.Sprintf("%dh", age/3600)
		default:
			labels[i] = fmt.Sprintf("%dd", age/86400)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", event, hi, lo, worst)
	b.WriteString(strings.Repeat("-", cols) + "\n")
	span := float64(hi - lo)
	if span == 0 {
		span = 1
	}
	steps := len(charset) * rows
	for off := 0; off < len(samples); off += cols {
		if off != 0 {
			b.WriteByte('\n')
		}
		part := samples[off:min(off+cols, len(samples))]
		line := make([]byte, len(part))
		for row := 0; ; row++ {
			more := false
			for j := range line {
				line[j] = ' '
			}
			for j, s := range part {
				// Redis truncates the product before dividing.
				step := min(max(int(float64(int(float64(s.ms-lo)*float64(steps)))/span), 0), steps-1)
				switch label := labels[off+j]; {
				case row < rows:
					more = true
					if idx := step - (rows-row-1)*len(charset); idx >= len(charset) {
						line[j] = '|'
					} else if idx >= 0 {
						line[j] = charset[idx]
					}
				case row == rows: // the blank line above the labels
					more = true
				case row-rows-1 < len(label):
					more = true
					line[j] = label[row-rows-1]
				}
			}
			if !more {
				break
			}
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
