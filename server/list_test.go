package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/redis/go-redis/v9"
)

// listLayout reads the list at key straight from the engine and checks
// the layout cmd_list.go promises: the version's element range holds
// exactly the slots head … head+count-1, no stale slot beside them. It
// returns the elements in list order (nil when the key is absent).
func listLayout(t *testing.T, s *Server, key string) []string {
	t.Helper()
	raw, err := s.DB().Get(dataKey(nil, 0, []byte(key)))
	if errors.Is(err, lsmgo.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	typ, payload, err := decodeHeader([]byte(key), raw)
	if err != nil || typ != typeList {
		t.Fatalf("%s: type %q, %v", key, typ, err)
	}
	m, err := decodeMeta([]byte(key), entry{typ: typ, payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	prefix := elemsKey(nil, []byte(key), m)
	it, err := s.DB().NewIter(&lsmgo.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var elems []string
	want := m.head
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()[len(prefix):]
		if len(k) != 8 {
			t.Fatalf("%s: element key suffix %x is not a slot", key, k)
		}
		if slot := int64(binary.BigEndian.Uint64(k) ^ 1<<63); slot != want {
			t.Fatalf("%s: slot %d where %d was due (head %d, count %d)", key, slot, want, m.head, m.count)
		}
		want++
		elems = append(elems, string(it.Value()))
	}
	if int64(len(elems)) != m.count {
		t.Fatalf("%s: %d slots, metadata counts %d", key, len(elems), m.count)
	}
	return elems
}

// TestListsAgainstModel runs seeded random list commands against a model
// (Go slices) through the server, checking each reply, and after each
// step the engine layout, across a restart. It needs no redis-server.
func TestListsAgainstModel(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := startServer(t, func(c *Config) { c.Dir = dir })
	c := newClient(t, s, 3, nil)
	rng := newRand(42)
	model := map[string][]string{}
	keys := []string{"a", "b"}
	steps := 3000
	if testing.Short() {
		steps = 1000
	}
	for i := range steps {
		if i == steps/2 {
			if err := s.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			s = startServer(t, func(c *Config) { c.Dir = dir })
			c = newClient(t, s, 3, nil)
		}
		k := keys[rng.IntN(2)]
		l := model[k]
		e := strconv.Itoa(rng.IntN(8))
		var args []any
		var want any
		switch op := rng.IntN(9); op {
		case 0, 1:
			n := 1 + rng.IntN(4)
			args = []any{"RPUSH", k}
			for range n {
				args = append(args, e)
				l = append(l, e)
			}
			if op == 1 {
				args[0] = "LPUSH"
				l = model[k]
				for range n {
					l = append([]string{e}, l...)
				}
			}
			want = int64(len(l))
		case 2:
			n := rng.IntN(3)
			args = []any{"LPOP", k, n}
			if rng.IntN(2) == 0 {
				args[0] = "RPOP"
			}
			n = min(n, len(l))
			var got []any
			for range n {
				if args[0] == "LPOP" {
					got, l = append(got, l[0]), l[1:]
				} else {
					got, l = append(got, l[len(l)-1]), l[:len(l)-1]
				}
			}
			want = got
			if len(model[k]) == 0 {
				want = nil
			} else if got == nil {
				want = []any{}
			}
		case 3:
			p := strconv.Itoa(rng.IntN(8))
			after := rng.IntN(2) == 0
			args = []any{"LINSERT", k, "BEFORE", p, e}
			if after {
				args[2] = "AFTER"
			}
			want = int64(-1)
			if len(l) == 0 {
				want = int64(0)
			}
			if at := slices.Index(l, p); at >= 0 {
				if after {
					at++
				}
				l = slices.Insert(slices.Clone(l), at, e)
				want = int64(len(l))
			}
		case 4:
			n := rng.IntN(5) - 2
			args = []any{"LREM", k, n, e}
			l = slices.Clone(l)
			removed := 0
			for j := range l {
				if n < 0 {
					j = len(l) - 1 - j
				}
				if l[j] == e && (n == 0 || removed < max(n, -n)) {
					l[j] = "\x00"
					removed++
				}
			}
			l = slices.DeleteFunc(l, func(s string) bool { return s == "\x00" })
			want = int64(removed)
		case 5:
			if len(l) == 0 {
				args, want = []any{"LLEN", k}, int64(0)
				break
			}
			j := rng.IntN(len(l))
			args, want = []any{"LSET", k, j - len(l)*rng.IntN(2), e}, "OK"
			l = slices.Clone(l)
			l[j] = e
		case 6:
			start, stop := rng.IntN(len(l)+2), rng.IntN(len(l)+2)-1
			args, want = []any{"LTRIM", k, start, stop}, "OK"
			if from, to, empty := listRange(int64(start), int64(stop), int64(len(l))); empty {
				l = nil
			} else {
				l = l[from : to+1]
			}
		case 7:
			dst := keys[rng.IntN(2)]
			args = []any{"LMOVE", k, dst, "LEFT", "RIGHT"}
			want = nil
			if len(l) > 0 {
				want = l[0]
				model[k] = l[1:]
				model[dst] = append(slices.Clone(model[dst]), l[0])
				l = model[k]
				if dst == k {
					l = model[dst]
				}
			}
		default:
			args = []any{"LRANGE", k, 0, -1}
			var got []any
			for _, x := range l {
				got = append(got, x)
			}
			want = got
			if got == nil {
				want = []any{}
			}
		}
		model[k] = l
		got, err := c.Do(ctx, args...).Result()
		if errors.Is(err, redis.Nil) {
			got, err = nil, nil
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("step %d %v: got %v (%v), want %v", i, args, got, err, want)
		}
		for _, key := range keys {
			if layout := listLayout(t, s, key); !slices.Equal(layout, model[key]) {
				t.Fatalf("step %d %v: %s holds %q, model %q", i, args, key, layout, model[key])
			}
		}
	}
}

// TestConcurrentListWrites: pushes and pops from many clients on one list
// are atomic: every element arrives once and the layout stays whole.
func TestConcurrentListWrites(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	const clients, each = 6, 100
	var wg sync.WaitGroup
	var mu sync.Mutex
	popped := map[string]bool{}
	for g := range clients {
		c := newClient(t, s, 2, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				push, pop := c.RPush, c.LPop
				if (g+i)%2 == 0 {
					push, pop = c.LPush, c.RPop
				}
				if err := push(ctx, "l", fmt.Sprint(g, "-", i)).Err(); err != nil {
					t.Error(err)
					return
				}
				if i%3 == 0 {
					v, err := pop(ctx, "l").Result()
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if popped[v] {
						t.Errorf("%s popped twice", v)
					}
					popped[v] = true
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	left := listLayout(t, s, "l")
	for _, v := range left {
		if popped[v] {
			t.Errorf("%s both popped and in the list", v)
		}
	}
	if got := len(left) + len(popped); got != clients*each {
		t.Errorf("%d elements accounted for, want %d", got, clients*each)
	}
}

// TestBigList builds a list of 200,000 elements (20,000 under -short)
// from both ends and reads slices of it: LRANGE and LINDEX deep inside,
// LPOS with MAXLEN, a trim of both ends, DEL, which writes the metadata
// only, and a new list at the same key that sees none of the old slots.
func TestBigList(t *testing.T) {
	s := startServer(t, nil)
	ctx := context.Background()
	c := newClient(t, s, 2, nil)
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	const chunk = 1000
	for i := 0; i < n/2; i += chunk {
		left, right := make([]any, chunk), make([]any, chunk)
		for j := range chunk {
			left[j] = strconv.Itoa(-(i + j) - 1) // LPUSH reverses them
			right[j] = strconv.Itoa(i + j)
		}
		pipe := c.Pipeline()
		pipe.LPush(ctx, "big", left...)
		pipe.RPush(ctx, "big", right...)
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The list is -n/2 … n/2-1 in order: index i holds i - n/2.
	at := func(i int) string { return strconv.Itoa(i - n/2) }
	runSteps(t, c, []step{
		{args: []any{"LLEN", "big"}, want: int64(n)},
		{args: []any{"LINDEX", "big", n / 3}, want: at(n / 3)},
		{args: []any{"LINDEX", "big", -1}, want: at(n - 1)},
		{args: []any{"LRANGE", "big", n/2 - 1, n/2 + 1}, want: []any{at(n/2 - 1), at(n / 2), at(n/2 + 1)}},
		{args: []any{"LPOS", "big", at(n - 10), "MAXLEN", 100}, want: nil},
		{args: []any{"LPOS", "big", at(n - 10), "RANK", -1, "MAXLEN", 100}, want: int64(n - 10)},
		{args: []any{"LTRIM", "big", 10, -11}, want: "OK"},
		{args: []any{"LLEN", "big"}, want: int64(n - 20)},
		{args: []any{"LINDEX", "big", 0}, want: at(10)},
		{args: []any{"DEL", "big"}, want: int64(1)},
		{args: []any{"RPUSH", "big", "x"}, want: int64(1)},
		{args: []any{"LRANGE", "big", 0, -1}, want: []any{"x"}},
	})
	if got := listLayout(t, s, "big"); !slices.Equal(got, []string{"x"}) {
		t.Errorf("new list holds %q", got)
	}
}
