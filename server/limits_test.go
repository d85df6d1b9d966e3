package server

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo"
)

// TestStringLimitFromEngine: the longest string the server accepts at a
// key is derived from the engine's entry limit, so a command the server
// accepts can never fail in the engine (or make the DB unflushable, as
// SETRANGE at proto-max-bulk-len once did). The case from the field:
// SETRANGE sr 536870911 x is refused before anything is allocated, and
// the server restarts on the directory.
func TestStringLimitFromEngine(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir })
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	for _, args := range [][]any{
		{"setrange", "sr", 536870911, "x"},
		{"setrange", "sr", s.ks.maxString([]byte("sr")), "x"},
	} {
		if err := c.Do(ctx, args...).Err(); err == nil || !strings.Contains(err.Error(), "string exceeds maximum allowed size") {
			t.Errorf("%v: %v, want the size error", args, err)
		}
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

	// maxString is exactly the engine's limit for a value stored in the
	// tree: one byte more and an engine without value separation refuses
	// the entry the keyspace would write (prefixed key, header byte,
	// payload). Separation only raises the engine's limit, so the server's
	// holds whatever the DB's ValueThreshold. The value's pages are never
	// touched: the engine refuses before copying it.
	db, err := lsmgo.Open(t.TempDir(), &lsmgo.Options{ValueThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := []byte("sr")
	b := db.NewBatch()
	b.Set(dataKey(nil, key), make([]byte, 1+s.ks.maxString(key)+1))
	if err := b.Err(); !errors.Is(err, lsmgo.ErrValueTooLarge) {
		t.Fatalf("engine accepted a string one byte over maxString: %v", err)
	}
}
