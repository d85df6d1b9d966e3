package bench

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// Target is the server under load, as its INFO server section describes
// it.
type Target struct {
	// Name is "lsmgo" for lsmgo serve, "redis" for another server that
	// reports a redis_version, else "unknown".
	Name    string `json:"name"`
	Version string `json:"version"`
	// PID is the server's process id when it runs on this machine in
	// another process, so its CPU time can be read from /proc; else 0.
	PID int `json:"pid,omitempty"`
	// InProcess says the server runs inside the load generator's own
	// process (a test), whose CPU time is then both of theirs.
	InProcess bool `json:"in_process,omitempty"`
}

// probeTarget connects once to learn what the server is; it is also where
// a wrong address or password is reported, before any level starts.
func probeTarget(cfg *ClientConfig) (Target, error) {
	nc, rd, err := dialClient(cfg)
	if err != nil {
		return Target{}, err
	}
	defer nc.Close()
	t := Target{Name: "unknown"}
	info, err := roundTrip(nc, rd, resp.AppendCommand(nil, []byte("INFO"), []byte("server")), cfg.Timeout)
	if errors.Is(err, io.EOF) {
		// twemproxy closes the connection on a command it does not
		// forward, INFO among them; what is behind it stays unknown,
		// and the load's GETs and SETs still go through.
		return t, nil
	}
	if err != nil {
		return t, fmt.Errorf("INFO server: %w", err)
	}
	if info.Type == '-' && strings.HasPrefix(info.Err, "NOAUTH") {
		return t, fmt.Errorf("%s (give --password)", info.Err)
	}
	if info.Type != '$' && info.Type != '=' {
		// A server without INFO can still be loaded.
		return t, nil
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(info.Str), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	switch {
	case fields["lsmgo_engine"] != "":
		t.Name = "lsmgo"
		t.Version = fields["redis_version"]
	case fields["redis_version"] != "":
		t.Name = "redis"
		t.Version = fields["redis_version"]
	}
	// A process id means something only on this machine, and the
	// client's own CPU time is not the server's.
	if tcp, ok := nc.RemoteAddr().(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		if pid, err := strconv.Atoi(fields["process_id"]); err == nil {
			if pid == os.Getpid() {
				t.InProcess = true
			} else if _, ok := procCPUSeconds(pid); ok {
				t.PID = pid
			}
		}
	}
	return t, nil
}

// dialClient opens one connection and authenticates it.
func dialClient(cfg *ClientConfig) (net.Conn, *resp.Reader, error) {
	nc, err := net.DialTimeout("tcp", cfg.Addr, cfg.Timeout)
	if err != nil {
		return nil, nil, err
	}
	rd := resp.NewReader(nc, resp.Limits{})
	if cfg.Password != "" {
		v, err := roundTrip(nc, rd, resp.AppendCommand(nil, []byte("AUTH"), []byte(cfg.Password)), cfg.Timeout)
		if err == nil && v.Type == '-' {
			err = fmt.Errorf("AUTH: %s", v.Err)
		}
		if err != nil {
			nc.Close()
			return nil, nil, err
		}
	}
	return nc, rd, nil
}

// roundTrip sends one command and reads its reply within timeout.
func roundTrip(nc net.Conn, rd *resp.Reader, cmd []byte, timeout time.Duration) (resp.Value, error) {
	nc.SetDeadline(time.Now().Add(timeout))
	defer nc.SetDeadline(time.Time{})
	if _, err := nc.Write(cmd); err != nil {
		return resp.Value{}, err
	}
	return rd.ReadValue()
}

// procCPUSeconds reads the user and system CPU time of process pid from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s, which
// Linux fixes for user space).
func procCPUSeconds(pid int) (float64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name in parentheses may hold spaces; count fields after
	// its closing parenthesis, which is field 2.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return float64(utime+stime) / 100, true
}

// procPeakRSS reads the peak resident set of process pid (VmHWM).
func procPeakRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	kb, _ := procField(b, "VmHWM:")
	return kb << 10
}

// load is what every level of a run shares: the value pool and the Zipf
// constants, both costly to build.
type load struct {
	cfg  *ClientConfig
	pool []byte
	zipf *zipf
}

// newLoad builds what the levels of a run share.
func newLoad(cfg *ClientConfig) *load {
	l := &load{cfg: cfg, pool: valuePool(cfg.Seed, 1, cfg.ValueSize)}
	if cfg.Distribution != Uniform {
		l.zipf = newZipf(uint64(cfg.Keyspace))
	}
	return l
}

// level is the state the connections of one level share while it runs:
// when to stop, the request budget, the latencies and the failures.
type level struct {
	l     *load
	stop  atomic.Bool
	start chan struct{}
	// budget is the number of commands not yet claimed when Requests
	// bounds the level.
	budget atomic.Int64
	latencies

	mu        sync.Mutex
	failed    int
	firstFail error
}

// claim returns how many commands the next batch of a connection may
// send: the pipeline depth, less at the end of a request budget, 0 when
// the level is over.
func (lv *level) claim() int {
	p := lv.l.cfg.Pipeline
	if lv.stop.Load() {
		return 0
	}
	if lv.l.cfg.Requests == 0 {
		return p
	}
	left := lv.budget.Add(-int64(p))
	switch {
	case left >= 0:
		return p
	case left > -int64(p):
		return p + int(left)
	}
	return 0
}

// fail counts a connection that ended with err.
func (lv *level) fail(err error) {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	lv.failed++
	if lv.firstFail == nil {
		lv.firstFail = err
	}
}

// runLevel runs one row: it connects conns clients, starts them together,
// stops them at the deadline or when the request budget is spent, and
// returns the row.
func (l *load) runLevel(step, conns int, t *Target, p *printer) Result {
	cfg := l.cfg
	r := Result{Step: step, Engine: t.Name, Workload: cfg.workloadName(), Threads: conns}
	lv := &level{l: l, start: make(chan struct{})}
	lv.budget.Store(cfg.Requests)
	lv.latencies.init()
	clients, err := l.connect(conns)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.nc.Close()
			<-lv.start
			if err := c.run(lv); err != nil {
				lv.fail(err)
			}
		}()
	}

	cpu0, srvCPU0 := cpuSeconds(), serverCPU(t)
	began := time.Now()
	close(lv.start)
	if cfg.Duration > 0 {
		timer := time.AfterFunc(cfg.Duration, func() { lv.stop.Store(true) })
		defer timer.Stop()
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	if cfg.Progress == "on" {
		lv.reportProgress(began, t.Name, conns, p, finished)
	}
	<-finished
	r.Seconds = time.Since(began).Seconds()
	clientCPU := cpuSeconds() - cpu0
	if t.PID != 0 {
		if srvCPU1 := serverCPU(t); srvCPU1 >= srvCPU0 {
			r.CPUSeconds = srvCPU1 - srvCPU0
		}
		r.PeakRSS = procPeakRSS(t.PID)
	}

	total := lv.total()
	var gets, errReplies, moved int64
	var firstErrReply string
	for _, c := range clients {
		r.Ops += c.ops
		r.Found += c.found
		r.UserBytesWritten += c.written
		gets += c.gets
		moved += c.moved
		errReplies += c.errReplies
		if firstErrReply == "" {
			firstErrReply = c.firstErrReply
		}
	}
	r.setLatency(total)
	r.setRates(moved)

	notes := []string{fmt.Sprintf("pipeline %d", cfg.Pipeline)}
	if gets > 0 {
		notes = append(notes, fmt.Sprintf("GET hits %.0f%%", 100*float64(r.Found)/float64(gets)))
	}
	if r.Seconds > 0 {
		// Client and server share the machine in a loopback run: what the
		// load generator burned is what the server did not get.
		who := "client"
		if t.InProcess {
			who = "client+server"
		}
		notes = append(notes, fmt.Sprintf("%s cpu %.2f cores", who, clientCPU/r.Seconds))
	}
	r.Note = strings.Join(notes, "; ")
	var errs []string
	if lv.failed > 0 {
		errs = append(errs, fmt.Sprintf("%d of %d connections failed, first: %v", lv.failed, conns, lv.firstFail))
	}
	if errReplies > 0 {
		errs = append(errs, fmt.Sprintf("%d error replies, first: %s", errReplies, firstErrReply))
	}
	if r.Ops == 0 && len(errs) == 0 {
		errs = append(errs, "no command completed")
	}
	r.Error = strings.Join(errs, "; ")
	return r
}

// serverCPU is the server's CPU time so far, or 0 when it cannot be read.
func serverCPU(t *Target) float64 {
	if t.PID == 0 {
		return 0
	}
	s, _ := procCPUSeconds(t.PID)
	return s
}

// dialParallelism bounds the dials in flight, so a thousand connections
// open quickly without a SYN flood the server's accept backlog drops.
const dialParallelism = 64

// connect opens conns authenticated connections, or none.
func (l *load) connect(conns int) ([]*clientConn, error) {
	clients := make([]*clientConn, conns)
	errs := make([]error, conns)
	sem := make(chan struct{}, dialParallelism)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			nc, rd, err := dialClient(l.cfg)
			if err != nil {
				errs[i] = err
				return
			}
			clients[i] = l.newClientConn(i, nc, rd)
		}()
	}
	wg.Wait()
	var failed int
	var first error
	for _, e := range errs {
		if e != nil {
			failed++
			first = cmp.Or(first, e)
		}
	}
	if failed == 0 {
		return clients, nil
	}
	for _, c := range clients {
		if c != nil {
			c.nc.Close()
		}
	}
	return nil, fmt.Errorf("%d of %d connections failed to open, first: %w", failed, conns, first)
}

// Commands the load generator sends.
var (
	cmdGET = []byte("GET")
	cmdSET = []byte("SET")
)

// clientConn is one connection's closed loop: send a batch of Pipeline
// commands, read every reply, record each command's latency from the
// batch's send to its reply, repeat.
type clientConn struct {
	id     int
	nc     net.Conn
	rd     *resp.Reader
	cfg    *ClientConfig
	out    []byte
	key    []byte
	keys   keyChooser
	values *valueStream
	isGet  []bool
	lat    []int64

	ops, gets, found, errReplies int64
	// moved is the key and value bytes sent and received; written the
	// SETs' share of it.
	moved, written int64
	firstErrReply  string
}

// seedClient separates the connections' streams; mixed with
// ClientConfig.Seed.
const seedClient = 0x636c69656e74

// newClientConn wraps connection id, whose keys and values are fixed by
// the seed and id alone.
func (l *load) newClientConn(id int, nc net.Conn, rd *resp.Reader) *clientConn {
	cfg := l.cfg
	return &clientConn{
		id: id, nc: nc, rd: rd, cfg: cfg,
		key:    []byte(keyPrefix + strings.Repeat("0", cfg.KeySize-len(keyPrefix))),
		keys:   keyChooser{rng: newRand(cfg.Seed ^ seedClient*uint64(id+1)), n: uint64(cfg.Keyspace), dist: cfg.Distribution, z: l.zipf},
		values: newValueStream(l.pool, cfg.ValueSize, id),
		isGet:  make([]bool, cfg.Pipeline),
		lat:    make([]int64, cfg.Pipeline),
	}
}

// putIndex writes i as the zero-padded decimal tail of the key.
func (c *clientConn) putIndex(i uint64) {
	for j := len(c.key) - 1; j >= len(keyPrefix); j-- {
		c.key[j] = byte('0' + i%10)
		i /= 10
	}
}

// run is the connection's closed loop until the level ends; an error
// ends the connection, not the level.
func (c *clientConn) run(lv *level) error {
	for {
		n := lv.claim()
		if n == 0 {
			return nil
		}
		c.out = c.out[:0]
		for i := range n {
			c.putIndex(c.keys.next())
			c.isGet[i] = c.keys.rng.IntN(100) < c.cfg.ReadPercent
			if c.isGet[i] {
				c.out = resp.AppendCommand(c.out, cmdGET, c.key)
			} else {
				v := c.values.next()
				c.out = resp.AppendCommand(c.out, cmdSET, c.key, v)
				c.written += int64(len(c.key) + len(v))
				c.moved += int64(len(c.key) + len(v))
			}
		}
		c.nc.SetDeadline(time.Now().Add(c.cfg.Timeout))
		sent := time.Now()
		if _, err := c.nc.Write(c.out); err != nil {
			return err
		}
		for i := range n {
			v, err := c.rd.ReadValue()
			if err != nil {
				return err
			}
			c.lat[i] = time.Since(sent).Nanoseconds()
			c.check(c.isGet[i], &v)
		}
		c.ops += int64(n)
		lv.record(c.id, c.lat[:n])
	}
}

// check counts one reply: a GET's value or nil, a SET's OK, or an error.
func (c *clientConn) check(get bool, v *resp.Value) {
	switch {
	case v.Type == '-' || v.Type == '!':
		c.errReplies++
		if c.firstErrReply == "" {
			c.firstErrReply = v.Err
		}
	case get:
		c.gets++
		c.moved += int64(len(c.key))
		if !v.Null && (v.Type == '$' || v.Type == '=') {
			c.found++
			c.moved += int64(len(v.Str))
		}
	}
}
