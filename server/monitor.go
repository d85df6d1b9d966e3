package server

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// MONITOR: every command a client sends, other than admin commands and
// those refused before they run, is fed to the monitoring clients as
// Redis' line
//
//	+<unix seconds>.<microseconds> [<db> <client addr>] "arg" "arg" …
//
// when it is about to run or be queued (a script's commands as they run,
// with the address "lua"). The lines travel through the monitor's Pub/Sub queue
// (pubsub.go), so a slow monitor costs at most the pubsub output limit
// and the commands fed never wait for it.
type monitorSet struct {
	n     atomic.Int64
	mu    sync.Mutex
	conns map[*conn]struct{}
}

func init() {
	register(spec{name: "monitor", arity: 1, flags: flagAdmin | flagLoading | flagStale, group: "server", since: "1.0.0",
		summary: "Listens for all requests received by the server in real-time.", run: cmdMonitor})
}

func cmdMonitor(c *conn, _ *command, _ [][]byte) error {
	c.ensureSub()
	m := &c.s.monitors
	m.mu.Lock()
	if m.conns == nil {
		m.conns = map[*conn]struct{}{}
	}
	if _, ok := m.conns[c]; !ok {
		m.conns[c] = struct{}{}
		m.n.Add(1)
	}
	m.mu.Unlock()
	c.setState(stateMonitor, true)
	c.ok()
	return nil
}

// unmonitor ends c's monitoring, if any: RESET and a closing connection.
func (c *conn) unmonitor() {
	c.setState(stateMonitor, false)
	m := &c.s.monitors
	if m.n.Load() == 0 {
		return
	}
	m.mu.Lock()
	if _, ok := m.conns[c]; ok {
		delete(m.conns, c)
		m.n.Add(-1)
	}
	m.mu.Unlock()
}

// feedMonitors sends the line of cmd, with its arguments args, to every
// monitor, naming c's address or addr when given.
func (c *conn) feedMonitors(cmd *command, args [][]byte, addr string) {
	if c.s.monitors.n.Load() == 0 || cmd.flags&flagAdmin != 0 {
		return
	}
	if addr == "" {
		addr = c.nc.RemoteAddr().String()
	}
	now := time.Now()
	line := []byte{'+'}
	line = strconv.AppendInt(line, now.Unix(), 10)
	line = append(line, '.')
	us := strconv.AppendInt(nil, int64(now.Nanosecond()/1000), 10)
	for range 6 - len(us) {
		line = append(line, '0')
	}
	line = append(line, us...)
	line = append(line, " ["...)
	line = strconv.AppendInt(line, int64(c.dbIndex()), 10)
	line = append(line, ' ')
	line = append(line, addr...)
	line = append(line, ']')
	for _, a := range args {
		line = append(line, ' ')
		line = appendRepr(line, a)
	}
	line = append(line, "\r\n"...)
	m := &c.s.monitors
	m.mu.Lock()
	defer m.mu.Unlock()
	for mc := range m.conns {
		mc.push(c, line, false, "")
	}
}

// appendRepr quotes s as Redis' sdscatrepr does.
func appendRepr(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, ch := range s {
		switch ch {
		case '\\', '"':
			dst = append(dst, '\\', ch)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\a':
			dst = append(dst, '\\', 'a')
		case '\b':
			dst = append(dst, '\\', 'b')
		default:
			if ch >= 0x20 && ch < 0x7f {
				dst = append(dst, ch)
			} else {
				dst = append(dst, '\\', 'x', hex[ch>>4], hex[ch&15])
			}
		}
	}
	return append(dst, '"')
}
