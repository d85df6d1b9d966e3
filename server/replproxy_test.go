package server

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// linkProxy is a loopback TCP proxy for a replication link: it forwards
// each connection to target, and can cut every connection it carries,
// refuse new ones while down, and hold each chunk it forwards for a delay.
type linkProxy struct {
	ln     net.Listener
	target string
	delay  atomic.Int64 // nanoseconds
	down   atomic.Bool
	mu     sync.Mutex
	conns  map[net.Conn]bool
	cuts   atomic.Int64
}

func newLinkProxy(t testing.TB, target string) *linkProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &linkProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.cut()
	})
	return p
}

func (p *linkProxy) addr() string { return p.ln.Addr().String() }

func (p *linkProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.down.Load() {
			c.Close()
			continue
		}
		d, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[d] = true, true
		p.mu.Unlock()
		go p.pipe(d, c)
		go p.pipe(c, d)
	}
}

// pipe copies src to dst, delaying each chunk, until either end fails;
// then it closes both.
func (p *linkProxy) pipe(dst, src net.Conn) {
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
			if d := p.delay.Load(); d > 0 {
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

// cut closes every connection the proxy carries.
func (p *linkProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	p.cuts.Add(1)
}
