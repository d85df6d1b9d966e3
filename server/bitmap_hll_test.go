package server

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/hll"
)

// TestConcurrentBitAndHLLWrites runs SETBIT, PFADD and PFCOUNT on one key
// each from several clients at once, most of them no-ops that take the
// unlocked path, and checks that no change was lost: every bit set is set
// and the HyperLogLog equals one built from all elements in one process.
func TestConcurrentBitAndHLLWrites(t *testing.T) {
	const clients, perClient = 6, 300
	s := startServer(t, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := newClient(t, s, 2, nil)
			for i := range perClient {
				// Each offset and element is written by two clients:
				// the second write is usually a no-op.
				n := (c/2)*perClient + i
				steps := []error{
					cl.SetBit(ctx, "bits", int64(n*7), 1).Err(),
					cl.PFAdd(ctx, "hll", fmt.Sprint("e", n)).Err(),
					cl.PFCount(ctx, "hll").Err(),
				}
				for _, err := range steps {
					if err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cl := newClient(t, s, 2, nil)
	distinct := clients / 2 * perClient
	if n := cl.BitCount(ctx, "bits", nil).Val(); n != int64(distinct) {
		t.Fatalf("BITCOUNT = %d, want %d", n, distinct)
	}
	var elems [][]byte
	for n := range distinct {
		elems = append(elems, fmt.Appendf(nil, "e%d", n))
	}
	want, _, err := hll.Add(hll.New(), elems, hll.DefaultSparseMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cl.Get(ctx, "hll").Bytes()
	if err != nil {
		t.Fatal(err)
	}
	registers := func(v []byte) []uint8 {
		d, err := hll.ToDense(v)
		if err != nil {
			t.Fatal(err)
		}
		return hll.DenseRegisters(d)
	}
	if !slices.Equal(registers(got), registers(want)) {
		t.Fatal("the HyperLogLog lost registers")
	}
	var u hll.Union
	if err := u.Merge(want); err != nil {
		t.Fatal(err)
	}
	if c := cl.PFCount(ctx, "hll").Val(); c != int64(u.Count()) {
		t.Fatalf("PFCOUNT = %d, want %d", c, u.Count())
	}
}
