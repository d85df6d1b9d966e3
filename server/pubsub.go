package server

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// Pub/Sub (doc/server.md, "Pub/Sub"). Publishers never write to a
// subscriber's socket and never wait for one: a message is encoded once
// per protocol and appended to each subscriber's queue, and the
// subscriber's own goroutine writes its queue out, in order with its
// replies, whenever it is about to read (connReader). A publisher wakes a
// subscriber blocked in a read by moving its read deadline to now. A
// queue that grows past client-output-buffer-limit pubsub — the hard
// limit at once, the soft limit for longer than its seconds — gets its
// connection closed by the publisher that pushed it over, so a
// subscriber that does not read costs at most the limit in memory. Each
// message waits for the subscriber's commands that had arrived before it
// was published to run first (push), so an UNSUBSCRIBE that arrived
// before a PUBLISH keeps its message out, as in Redis.

func init() {
	const g = "pubsub"
	f := flagLoading | flagStale
	register(
		spec{name: "subscribe", arity: -2, flags: f, pipe: pipeSubscribed, group: g, since: "2.0.0",
			summary: "Listens for messages published to channels.", run: subscribe(false)},
		spec{name: "psubscribe", arity: -2, flags: f, pipe: pipeSubscribed, group: g, since: "2.0.0",
			summary: "Listens for messages published to channels that match one or more patterns.", run: subscribe(true)},
		spec{name: "unsubscribe", arity: -1, flags: f, pipe: pipeSubscribed, group: g, since: "2.0.0",
			summary: "Stops listening to messages posted to channels.", run: unsubscribe(false)},
		spec{name: "punsubscribe", arity: -1, flags: f, pipe: pipeSubscribed, group: g, since: "2.0.0",
			summary: "Stops listening to messages published to channels that match one or more patterns.", run: unsubscribe(true)},
		spec{name: "publish", arity: 3, flags: f | flagFast, group: g, since: "2.0.0",
			summary: "Posts a message to a channel.", run: cmdPublish},
		spec{name: "pubsub", arity: -2, group: g, since: "2.8.0", summary: "A container for Pub/Sub commands.",
			subs: []spec{
				{name: "channels", arity: -2, flags: f, since: "2.8.0", summary: "Returns the active channels.", run: cmdPubsubChannels},
				{name: "numsub", arity: -2, flags: f, since: "2.8.0", summary: "Returns a count of subscribers to channels.", run: cmdPubsubNumsub},
				{name: "numpat", arity: 2, flags: f, since: "2.8.0", summary: "Returns a count of unique pattern subscriptions.", run: cmdPubsubNumpat},
				{name: "help", arity: 2, flags: f, since: "6.2.0", summary: "Returns helpful text about the different subcommands.", run: cmdHelp},
			}},
	)
}

// msgSubscribedOnly is Redis' reply to a RESP2 client that sends another
// command while subscribed.
func msgSubscribedOnly(cmd *command) string {
	return "ERR Can't execute '" + cmd.name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
}

// pubsubHub knows every subscription: which connections listen to each
// channel and each pattern.
type pubsubHub struct {
	mu       sync.RWMutex
	channels map[string]map[*conn]struct{}
	patterns map[string]map[*conn]struct{}
	// limitClosed counts the subscribers closed for passing
	// client-output-buffer-limit pubsub.
	limitClosed atomic.Int64
}

// subscriber is a connection's side of Pub/Sub. channels and patterns
// belong to the connection's goroutine; the queue is shared with
// publishers under mu.
type subscriber struct {
	channels map[string]struct{}
	patterns map[string]struct{}

	mu sync.Mutex
	// queue holds encoded messages not yet handed to the connection's
	// writer; inflight counts those handed over and not yet flushed. The
	// limit applies to their sum.
	queue    []byte
	spare    []byte
	marks    []pushMark
	inflight int
	// overSoft is when the sum passed the soft limit, zero while under.
	overSoft time.Time
	closed   bool
	// woken is set when a publisher moved the read deadline to wake the
	// connection, so that the timeout it causes is not taken for idleness.
	woken atomic.Bool
}

// pushMark describes one queued message: where it ends in the queue, how
// much of the subscriber's input had arrived when it was published, and
// the subscription it came through. The marks are in arrived order.
type pushMark struct {
	end     int
	arrived int64
	pattern bool
	name    string
}

func (sub *subscriber) count() int { return len(sub.channels) + len(sub.patterns) }

// ensureSub gives the connection its message queue, in its own
// goroutine, before anything that lets others push to it (a
// subscription, MONITOR, tracking, RESP3) is published.
func (c *conn) ensureSub() {
	if c.sub == nil {
		c.sub = &subscriber{channels: map[string]struct{}{}, patterns: map[string]struct{}{}}
		c.bufs.sub.Store(c.sub)
	}
}

// subscribed reports whether the connection has any subscription.
func (c *conn) subscribed() bool { return c.sub != nil && c.sub.count() > 0 }

// subKind names a (un)subscribe confirmation: kind, or its pattern form.
func subKind(kind string, pattern bool) string {
	if pattern {
		return "p" + kind
	}
	return kind
}

// subSets returns the connection's set of channels, or of patterns, and
// the hub's map of the same.
func (c *conn) subSets(pattern bool) (mine map[string]struct{}, hub *map[string]map[*conn]struct{}) {
	if pattern {
		return c.sub.patterns, &c.s.pubsub.patterns
	}
	return c.sub.channels, &c.s.pubsub.channels
}

// subscribe returns the handler of SUBSCRIBE, or PSUBSCRIBE when pattern.
func subscribe(pattern bool) handler {
	kind := subKind("subscribe", pattern)
	return func(c *conn, _ *command, args [][]byte) error {
		c.deliverPushes(c.inputEnd())
		c.ensureSub()
		mine, hubSet := c.subSets(pattern)
		for _, name := range args[1:] {
			if _, ok := mine[string(name)]; !ok {
				mine[string(name)] = struct{}{}
				h := &c.s.pubsub
				h.mu.Lock()
				if *hubSet == nil {
					*hubSet = map[string]map[*conn]struct{}{}
				}
				set := (*hubSet)[string(name)]
				if set == nil {
					set = map[*conn]struct{}{}
					(*hubSet)[string(name)] = set
				}
				set[c] = struct{}{}
				h.mu.Unlock()
				c.countSubs()
			}
			c.subReply(kind, name, c.sub.count())
		}
		return nil
	}
}

// unsubscribe returns the handler of UNSUBSCRIBE, or PUNSUBSCRIBE when
// pattern: from the names given, or from all when none is.
func unsubscribe(pattern bool) handler {
	kind := subKind("unsubscribe", pattern)
	return func(c *conn, _ *command, args [][]byte) error {
		c.deliverPushes(c.inputEnd())
		names := args[1:]
		if len(names) == 0 {
			for _, name := range c.subscriptions(pattern) {
				names = append(names, []byte(name))
			}
			if len(names) == 0 {
				c.subReply(kind, nil, c.subCount())
				return nil
			}
		}
		counts := make([]int, len(names))
		for i, name := range names {
			c.unsubscribeOne(pattern, name)
			counts[i] = c.subCount()
		}
		// What is still queued for these subscriptions was published after
		// this command had arrived: Redis would have run it first.
		c.dropUnsubscribed()
		for i, name := range names {
			c.subReply(kind, name, counts[i])
		}
		return nil
	}
}

// countSubs publishes the connection's subscription counts for CLIENT
// LIST and CLIENT KILL TYPE pubsub.
func (c *conn) countSubs() {
	c.nsub.Store(int64(len(c.sub.channels)))
	c.npsub.Store(int64(len(c.sub.patterns)))
	c.setState(statePubsub, c.sub.count() > 0)
}

func (c *conn) subCount() int {
	if c.sub == nil {
		return 0
	}
	return c.sub.count()
}

// subscriptions lists the connection's channels, or patterns, in order.
func (c *conn) subscriptions(pattern bool) []string {
	if c.sub == nil {
		return nil
	}
	m, _ := c.subSets(pattern)
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func (c *conn) unsubscribeOne(pattern bool, name []byte) {
	if c.sub == nil {
		return
	}
	mine, hubSet := c.subSets(pattern)
	if _, ok := mine[string(name)]; !ok {
		return
	}
	delete(mine, string(name))
	h := &c.s.pubsub
	h.mu.Lock()
	set := (*hubSet)[string(name)]
	delete(set, c)
	if len(set) == 0 {
		delete(*hubSet, string(name))
	}
	h.mu.Unlock()
	c.countSubs()
}

// unsubscribeAll ends every subscription: RESET, and a closing
// connection.
func (c *conn) unsubscribeAll() {
	for _, pattern := range []bool{false, true} {
		for _, name := range c.subscriptions(pattern) {
			c.unsubscribeOne(pattern, []byte(name))
		}
	}
}

// subReply writes a (un)subscribe confirmation: a push in RESP3.
func (c *conn) subReply(kind string, name []byte, count int) {
	w := c.pushOut()
	w.PushHeader(3)
	w.BulkString(kind)
	if name == nil {
		w.Null()
	} else {
		w.Bulk(name)
	}
	w.Int(int64(count))
}

func cmdPublish(c *conn, _ *command, args [][]byte) error {
	n := c.s.pubsub.publish(c, args[1], args[2])
	// A RESP3 client subscribed to the channel gets the message before
	// the reply, as from Redis.
	c.deliverPushes(c.inputEnd())
	c.wr.Int(n)
	return nil
}

// publish delivers msg on channel, sent by the connection from (nil for
// the server's own messages: keyspace events of expiry), to its
// subscribers and to those of matching patterns, and returns how many
// deliveries it made.
func (h *pubsubHub) publish(from *conn, channel, msg []byte) int64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var n int64
	// Encoded once per protocol: RESP2 arrays, RESP3 pushes.
	var plain [2][]byte
	name := string(channel)
	for c := range h.channels[name] {
		p := &plain[c.protoIndex()]
		if *p == nil {
			*p = encodeMessage(c.protoIndex(), []byte("message"), channel, msg)
		}
		c.push(from, *p, false, name)
		n++
	}
	for pat, conns := range h.patterns {
		if !globMatch([]byte(pat), channel, false) {
			continue
		}
		var enc [2][]byte
		for c := range conns {
			p := &enc[c.protoIndex()]
			if *p == nil {
				*p = encodeMessage(c.protoIndex(), []byte("pmessage"), []byte(pat), channel, msg)
			}
			c.push(from, *p, true, pat)
			n++
		}
	}
	return n
}

// protoIndex is 0 for a RESP2 connection, 1 for RESP3.
func (c *conn) protoIndex() int {
	if c.proto.Load() == 3 {
		return 1
	}
	return 0
}

// encodeMessage encodes a message frame: an array of bulk strings, or in
// RESP3 (proto 1) the same as a push.
func encodeMessage(proto int, parts ...[]byte) []byte {
	b := resp.AppendCommand(nil, parts...)
	if proto == 1 {
		b[0] = '>'
	}
	return b
}

// push queues an encoded message for c, which came through the channel
// or pattern name, closing c instead if its queue would pass
// client-output-buffer-limit pubsub. Called by publishers.
//
// The message is marked with how much of c's input had reached the
// server when it was published: c delivers it only once it has run the
// commands that input completes (deliverPushes), and drops it if one of
// them unsubscribed (dropUnsubscribed). So, as in Redis, an UNSUBSCRIBE
// that arrived before a PUBLISH is run first.
func (c *conn) push(from *conn, msg []byte, pattern bool, name string) {
	s := c.s
	var arrived int64
	if c == from {
		arrived = c.inputEnd() - 1 // published by the command running
	} else if n, ok := arrivedBytes(c.nc); ok {
		arrived = n
	} else {
		arrived = c.inBytes.Load()
	}
	sub := c.sub
	lim := s.config().PubsubBufferLimit
	sub.mu.Lock()
	if sub.closed {
		sub.mu.Unlock()
		return
	}
	wake := len(sub.queue) == 0
	sub.insertLocked(msg, pushMark{arrived: arrived, pattern: pattern, name: name})
	size := int64(len(sub.queue) + sub.inflight)
	over := lim.Hard > 0 && size > lim.Hard
	if lim.Soft > 0 && size > lim.Soft {
		now := time.Now()
		if sub.overSoft.IsZero() {
			sub.overSoft = now
		}
		over = over || now.Sub(sub.overSoft) > lim.SoftTime
	} else {
		sub.overSoft = time.Time{}
	}
	if over {
		sub.closed, sub.queue, sub.spare = true, nil, nil
	}
	sub.mu.Unlock()
	if over {
		s.pubsub.limitClosed.Add(1)
		s.log.Warn("closing subscriber that passed client-output-buffer-limit pubsub", "client", c.id,
			"addr", c.raddr.String(), "buffer_bytes", size)
		c.closeSocket()
		return
	}
	if wake {
		sub.woken.Store(true)
		c.nc.SetReadDeadline(time.Now())
	}
}

// insertLocked queues msg after the messages whose input arrived no
// later than its own: at the end, unless publishers raced.
func (sub *subscriber) insertLocked(msg []byte, m pushMark) {
	i := len(sub.marks)
	for i > 0 && sub.marks[i-1].arrived > m.arrived {
		i--
	}
	at := 0
	if i > 0 {
		at = sub.marks[i-1].end
	}
	sub.queue = slices.Insert(sub.queue, at, msg...)
	m.end = at + len(msg)
	sub.marks = slices.Insert(sub.marks, i, m)
	for j := i + 1; j < len(sub.marks); j++ {
		sub.marks[j].end += len(msg)
	}
}

// inputEnd is how much of the connection's input the command running
// (or the last one run) ends at: what it read, less what it has not
// parsed yet.
func (c *conn) inputEnd() int64 {
	return c.inBytes.Load() - int64(len(c.blk.readAhead)) - int64(c.rd.Buffered())
}

// deliverPushes hands the queued messages published before input limit
// had arrived to the connection's writer, in order after the replies
// already written. The others wait for the commands before limit to run.
func (c *conn) deliverPushes(limit int64) {
	sub := c.sub
	if sub == nil {
		return
	}
	sub.mu.Lock()
	n := 0
	for n < len(sub.marks) && sub.marks[n].arrived < limit {
		n++
	}
	if n == 0 {
		sub.mu.Unlock()
		return
	}
	q := sub.queue
	if n == len(sub.marks) {
		sub.queue = sub.spare[:0]
		sub.spare = nil
		sub.marks = sub.marks[:0]
	} else {
		end := sub.marks[n-1].end
		q = slices.Clone(q[:end])
		sub.queue = sub.queue[:copy(sub.queue, sub.queue[end:])]
		sub.marks = sub.marks[:copy(sub.marks, sub.marks[n:])]
		for i := range sub.marks {
			sub.marks[i].end -= end
		}
	}
	sub.inflight += len(q)
	sub.mu.Unlock()
	c.pushOut().Raw(q)
	sub.mu.Lock()
	if sub.spare == nil && cap(q) <= 64<<10 {
		sub.spare = q[:0]
	}
	sub.mu.Unlock()
}

// dropUnsubscribed removes the queued messages of subscriptions the
// connection no longer holds.
func (c *conn) dropUnsubscribed() {
	sub := c.sub
	if sub == nil {
		return
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	queue, marks, start := sub.queue[:0], sub.marks[:0], 0
	for _, m := range sub.marks {
		mine := sub.channels
		if m.pattern {
			mine = sub.patterns
		}
		msg := sub.queue[start:m.end]
		start = m.end
		// The server's own messages (MONITOR lines, tracking
		// invalidations) have no name and stay.
		if _, ok := mine[m.name]; ok || m.name == "" {
			queue = append(queue, msg...) // never ahead of msg: no overlap
			m.end = len(queue)
			marks = append(marks, m)
		}
	}
	sub.queue, sub.marks = queue, marks
}

// flushedPushes records that everything handed to the writer has been
// written to the socket.
func (c *conn) flushedPushes() {
	if sub := c.sub; sub != nil {
		sub.mu.Lock()
		sub.inflight = 0
		sub.mu.Unlock()
	}
}

// readyPushes reports whether messages published before input limit had
// arrived wait in the queue.
func (c *conn) readyPushes(limit int64) bool {
	sub := c.sub
	if sub == nil {
		return false
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return len(sub.marks) > 0 && sub.marks[0].arrived < limit
}

func cmdPubsubChannels(c *conn, cmd *command, args [][]byte) error {
	if len(args) > 3 {
		return redisError("ERR unknown subcommand or wrong number of arguments for '" + string(args[1]) + "'. Try PUBSUB HELP.")
	}
	h := &c.s.pubsub
	h.mu.RLock()
	var names []string
	for name := range h.channels {
		if len(args) < 3 || globMatch(args[2], []byte(name), false) {
			names = append(names, name)
		}
	}
	h.mu.RUnlock()
	slices.Sort(names)
	c.wr.ArrayHeader(len(names))
	for _, n := range names {
		c.wr.BulkString(n)
	}
	return nil
}

func cmdPubsubNumsub(c *conn, _ *command, args [][]byte) error {
	h := &c.s.pubsub
	h.mu.RLock()
	defer h.mu.RUnlock()
	c.wr.ArrayHeader(2 * (len(args) - 2))
	for _, name := range args[2:] {
		c.wr.Bulk(name)
		c.wr.Int(int64(len(h.channels[string(name)])))
	}
	return nil
}

func cmdPubsubNumpat(c *conn, _ *command, _ [][]byte) error {
	c.wr.Int(int64(c.s.pubsub.numPatterns()))
	return nil
}

func (h *pubsubHub) numPatterns() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.patterns)
}

func (h *pubsubHub) numChannels() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.channels)
}

// outputLimit is a client-output-buffer-limit class: a hard limit in
// bytes, and a soft one that may be passed for at most SoftTime (0:
// none).
type outputLimit struct {
	Hard, Soft int64
	SoftTime   time.Duration
}

// outputLimitSetting is client-output-buffer-limit. Its value is Redis':
// classes, each followed by hard limit, soft limit and soft seconds. The
// pubsub class ("32mb 8mb 60" alone means it) and the replica class
// (repllimit.go) apply; normal clients have no output limit (0 0 0, as in
// Redis).
func outputLimitSetting() *setting {
	return &setting{name: "client-output-buffer-limit", live: true,
		usage: "close a subscriber or replica whose pending output passes: pubsub|replica <hard> <soft> <soft-seconds>",
		get: func(c *Config) string {
			p, r := c.PubsubBufferLimit, c.ReplicaBufferLimit
			return fmt.Sprintf("normal 0 0 0 slave %d %d %d pubsub %d %d %d", r.Hard, r.Soft, int64(r.SoftTime/time.Second),
				p.Hard, p.Soft, int64(p.SoftTime/time.Second))
		},
		set: func(c *Config, v string) error {
			f := strings.Fields(v)
			if len(f) == 3 {
				f = append([]string{"pubsub"}, f...)
			}
			if len(f) == 0 || len(f)%4 != 0 {
				return errors.New("wrong number of arguments")
			}
			l, rl := c.PubsubBufferLimit, c.ReplicaBufferLimit
			for i := 0; i < len(f); i += 4 {
				hard, err := parseBound(f[i+1], 0, 1<<62, true)
				if err != nil {
					return err
				}
				soft, err := parseBound(f[i+2], 0, 1<<62, true)
				if err != nil {
					return err
				}
				secs, err := strconv.ParseInt(f[i+3], 10, 64)
				if err != nil || secs < 0 || secs > 1<<32 {
					return errors.New("argument couldn't be parsed into an integer")
				}
				lim := outputLimit{Hard: hard, Soft: soft, SoftTime: time.Duration(secs) * time.Second}
				switch strings.ToLower(f[i]) {
				case "pubsub":
					l = lim
				case "normal":
					if hard != 0 || soft != 0 || secs != 0 {
						return errors.New("the normal class has no output limit here; only pubsub applies")
					}
				case "slave", "replica":
					rl = lim
				default:
					return errors.New("invalid client class")
				}
			}
			c.PubsubBufferLimit, c.ReplicaBufferLimit = l, rl
			return nil
		}}
}
