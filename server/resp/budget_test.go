package resp

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
)

// countingBudget grants up to limit bytes and records what it was told.
type countingBudget struct {
	held, peak, limit int
}

var errOverBudget = errors.New("over budget")

func (b *countingBudget) Grow(n int) error {
	if b.held+n > b.limit {
		return errOverBudget
	}
	b.held += n
	b.peak = max(b.peak, b.held)
	return nil
}

func (b *countingBudget) Shrink(n int) { b.held -= n }

// TestBudgetTracksBuffer checks that the budget always holds exactly the
// reader's buffer size: as a big argument arrives, after the buffer shrinks
// back between commands, and after Close.
func TestBudgetTracksBuffer(t *testing.T) {
	big := strings.Repeat("x", 3<<20)
	input := "*2\r\n$3\r\nGET\r\n$" + strconv.Itoa(len(big)) + "\r\n" + big + "\r\n*1\r\n$4\r\nPING\r\n"
	b := &countingBudget{limit: 1 << 30}
	r := NewReader(&chunkedReader{s: input, n: 4096}, Limits{})
	r.SetBudget(b)
	if b.held != len(r.buf) {
		t.Fatalf("initial: budget %d, buffer %d", b.held, len(r.buf))
	}
	args, err := r.ReadCommand()
	if err != nil || len(args) != 2 || len(args[1]) != len(big) {
		t.Fatalf("big command: %d args, %v", len(args), err)
	}
	if b.held != len(r.buf) || b.peak < len(big) {
		t.Fatalf("after big command: budget %d (peak %d), buffer %d", b.held, b.peak, len(r.buf))
	}
	if args, err := r.ReadCommand(); err != nil || string(args[0]) != "PING" {
		t.Fatalf("PING: %q, %v", args, err)
	}
	if b.held != len(r.buf) || b.held > maxRetainedBufSize {
		t.Fatalf("after the buffer was released: budget %d, buffer %d", b.held, len(r.buf))
	}
	r.Close()
	if b.held != 0 {
		t.Fatalf("after Close: budget holds %d", b.held)
	}
	if _, err := r.ReadCommand(); err == nil {
		t.Fatal("read after Close succeeded")
	}
}

// TestBudgetRefusal: a growth the budget refuses fails the read with the
// budget's error, for good, and the buffer never grows past the grant.
func TestBudgetRefusal(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	input := "*2\r\n$3\r\nSET\r\n$" + strconv.Itoa(len(big)) + "\r\n" + big + "\r\n"
	b := &countingBudget{limit: 256 << 10}
	r := NewReader(&chunkedReader{s: input, n: 8192}, Limits{})
	r.SetBudget(b)
	if _, err := r.ReadCommand(); !errors.Is(err, errOverBudget) {
		t.Fatalf("read past the budget: %v", err)
	}
	if b.held > b.limit || b.held != len(r.buf) {
		t.Fatalf("budget %d (limit %d), buffer %d", b.held, b.limit, len(r.buf))
	}
	if _, err := r.ReadCommand(); !errors.Is(err, errOverBudget) {
		t.Fatalf("second read: %v", err)
	}
	// A budget that refuses even the first buffer refuses every read.
	r2 := NewReader(strings.NewReader("PING\r\n"), Limits{})
	r2.SetBudget(&countingBudget{limit: 10})
	if _, err := r2.ReadCommand(); !errors.Is(err, errOverBudget) {
		t.Fatalf("reader refused its first buffer: %v", err)
	}
}

// chunkedReader returns at most n bytes a read, as a socket would.
type chunkedReader struct {
	s string
	n int
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.s)
	c.s = c.s[k:]
	return k, nil
}
