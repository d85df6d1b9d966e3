package server

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// aclLog is ACL LOG: the latest refusals (commands, keys, channels,
// failed AUTHs), newest first, at most acllog-max-len of them. A refusal
// like one of the ten newest entries (same reason, context, object and
// user) within a minute of its last update counts in that entry instead,
// as in Redis.
type aclLog struct {
	// denied counts the refusals by kind, for INFO's
	// acl_access_denied_* fields.
	denied [aclDeniedChannel + 1]atomic.Int64

	mu      sync.Mutex
	entries []*aclLogEntry
	nextID  int64
}

type aclLogEntry struct {
	id                            int64
	count                         int64
	reason, context, object, user string
	clientInfo                    string
	created, updated              time.Time
}

const (
	aclLogGroupWindow = time.Minute
	aclLogGroupScan   = 10
)

func aclLogReason(d aclDenial) string {
	switch d {
	case aclDeniedKey:
		return "key"
	case aclDeniedChannel:
		return "channel"
	case aclDeniedAuth:
		return "auth"
	}
	return "command"
}

// add records a refusal of c's command (or AUTH).
func (l *aclLog) add(c *conn, d aclDenial, context, object, user string) {
	l.denied[d].Add(1)
	reason := aclLogReason(d)
	var info strings.Builder
	c.describe(&info, nil, nil, nil)
	now := time.Now()
	max := c.s.config().ACLLogMaxLen
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range l.entries[:min(len(l.entries), aclLogGroupScan)] {
		if e.reason == reason && e.context == context && e.object == object && e.user == user &&
			now.Sub(e.updated) < aclLogGroupWindow {
			e.count++
			e.updated = now
			e.clientInfo = strings.TrimSuffix(info.String(), "\n")
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = e
			return
		}
	}
	e := &aclLogEntry{id: l.nextID, count: 1, reason: reason, context: context, object: object, user: user,
		clientInfo: strings.TrimSuffix(info.String(), "\n"), created: now, updated: now}
	l.nextID++
	l.entries = append([]*aclLogEntry{e}, l.entries...)
	if len(l.entries) > max {
		l.entries = l.entries[:max]
	}
}

func (l *aclLog) reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}

// latest returns copies of the n newest entries.
func (l *aclLog) latest(n int) []aclLogEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]aclLogEntry, 0, min(n, len(l.entries)))
	for _, e := range l.entries[:min(n, len(l.entries))] {
		out = append(out, *e)
	}
	return out
}

// trim applies a lowered acllog-max-len.
func (l *aclLog) trim(max int) {
	l.mu.Lock()
	if len(l.entries) > max {
		l.entries = l.entries[:max]
	}
	l.mu.Unlock()
}
