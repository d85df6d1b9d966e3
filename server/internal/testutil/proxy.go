package testutil

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a loopback TCP proxy for a replication link: it forwards each
// connection to target, and can cut every connection it carries, refuse
// new ones while Down, and hold each chunk it forwards for Delay.
type Proxy struct {
	ln     net.Listener
	target atomic.Pointer[string]
	// Delay is how long each chunk waits, in nanoseconds.
	Delay atomic.Int64
	// Down refuses new connections while set.
	Down  atomic.Bool
	mu    sync.Mutex
	conns map[net.Conn]bool
	// Cuts counts the calls to Cut.
	Cuts atomic.Int64
	// Chunks counts the chunks read from target's side: at most as many
	// as target wrote, fewer when TCP joined writes.
	Chunks atomic.Int64
}

// NewProxy starts a proxy to target, closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, conns: map[net.Conn]bool{}}
	p.target.Store(&target)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
	})
	return p
}

// Retarget forwards the connections accepted from now on to target: a
// server restarted on a new address (port 0) stays behind the same
// proxy address.
func (p *Proxy) Retarget(target string) { p.target.Store(&target) }

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.Down.Load() {
			c.Close()
			continue
		}
		d, err := net.Dial("tcp", *p.target.Load())
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[d] = true, true
		p.mu.Unlock()
		go p.pipe(d, c, nil)
		go p.pipe(c, d, &p.Chunks)
	}
}

// pipe copies src to dst, delaying each chunk and counting it in chunks
// if not nil, until either end fails; then it closes both.
func (p *Proxy) pipe(dst, src net.Conn, chunks *atomic.Int64) {
	defer func() {
		p.mu.Lock()
		delete(p.conns, src)
		delete(p.conns, dst)
		p.mu.Unlock()
		src.Close()
		dst.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if chunks != nil {
				chunks.Add(1)
			}
			if d := p.Delay.Load(); d > 0 {
				time.Sleep(time.Duration(d))
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Cut closes every connection the proxy carries.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	p.Cuts.Add(1)
}
