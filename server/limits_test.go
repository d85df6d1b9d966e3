package server

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo"
)

// TestStringLimitFromEngine: the longest string the server accepts at a
// key is derived from what the engine accepts (DB.MaxValueLen), so a
// command the server accepts can never fail in the engine (or make the DB
// unflushable, as SETRANGE at proto-max-bulk-len once did). With value
// separation, the engine's default, proto-max-bulk-len is the tighter
// bound: one byte past it is refused before anything is allocated, and
// the server restarts on the directory.
func TestStringLimitFromEngine(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir })
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	if max := s.ks.maxString(0, []byte("sr")); max < s.config().ProtoMaxBulkLen {
		t.Fatalf("with value separation the engine takes %d bytes at a key, less than proto-max-bulk-len", max)
	}
	if err := c.Do(ctx, "setrange", "sr", 512<<20, "x").Err(); err == nil || !strings.Contains(err.Error(), "string exceeds maximum allowed size") {
		t.Errorf("SETRANGE one byte past proto-max-bulk-len: %v, want the size error", err)
	}
	if n, err := c.Exists(ctx, "sr").Result(); err != nil || n != 0 {
		t.Fatalf("refused SETRANGE created the key: %d, %v", n, err)
	}
	if err := c.Set(ctx, "after", "ok", 0).Err(); err != nil {
		t.Fatalf("SET after the refusal: %v", err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	s2 := startServer(t, func(c *Config) { c.Dir = dir })
	if v, err := newClient(t, s2, 2, nil).Get(ctx, "after").Result(); err != nil || v != "ok" {
		t.Fatalf("after restart: %q, %v", v, err)
	}

	// Without value separation the engine's entry limit is the bound, and
	// maxString is exactly it: one byte more and the engine refuses the
	// entry the keyspace would write (prefixed key, header byte, payload).
	// The value's pages are never touched: the engine refuses before
	// copying it.
	db, err := lsmgo.Open(t.TempDir(), &lsmgo.Options{ValueThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ks := &keyspace{db: db}
	key := []byte("sr")
	if got, want := ks.maxString(0, key), int64(lsmgo.MaxEntrySize-len(key)-2); got != want {
		t.Fatalf("maxString without separation = %d, want %d", got, want)
	}
	b := db.NewBatch()
	b.Set(dataKey(nil, 0, key), make([]byte, 1+ks.maxString(0, key)+1))
	if err := b.Err(); !errors.Is(err, lsmgo.ErrValueTooLarge) {
		t.Fatalf("engine accepted a string one byte over maxString: %v", err)
	}
}
