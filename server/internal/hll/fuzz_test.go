package hll

import (
	"bytes"
	"testing"
)

// FuzzValue feeds arbitrary string values to everything that decodes
// one: nothing may panic, an accepted value must stay a valid HLL after
// Add and Store, and a value every decoder accepts must give the same
// registers through the union as through conversion to dense.
func FuzzValue(f *testing.F) {
	f.Add(New(), []byte("a"))
	dense, _, _ := Add(New(), [][]byte{[]byte("x")}, 0)
	f.Add(dense, []byte("b"))
	f.Add([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xfe\x7f"), []byte("c"))
	f.Add([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x80\xfb\x7f\xf0\x00\xff\x80"), []byte("d"))
	f.Fuzz(func(t *testing.T, v, elem []byte) {
		orig := bytes.Clone(v)
		if Check(v) != nil {
			return
		}
		card, updated, countErr := Count(v)
		var u Union
		mergeErr := u.Merge(v)
		out, _, addErr := Add(v, [][]byte{elem}, 300)
		if !bytes.Equal(v, orig) {
			t.Fatal("a decoder modified its input")
		}
		if !WouldChange(v, [][]byte{elem}) && (addErr != nil || !bytes.Equal(out, v)) {
			t.Fatalf("WouldChange said no change, Add gave %v and a different value", addErr)
		}
		if v[4] == encSparse && (countErr == nil) != (mergeErr == nil) && v[15]&0x80 != 0 {
			t.Fatalf("Count says %v, Merge says %v", countErr, mergeErr)
		}
		if updated != nil {
			if c2, again, err := Count(updated); err != nil || c2 != card || again != nil {
				t.Fatalf("cached count %d, %v, %v after computing %d", c2, again, err, card)
			}
		}
		if mergeErr != nil {
			return
		}
		if addErr == nil {
			if err := Check(out); err != nil {
				t.Fatalf("Add produced an invalid value: %v", err)
			}
		}
		stored, err := u.Store(nil, 300)
		if err != nil {
			t.Fatalf("Store: %v", err)
		}
		var again Union
		if err := again.Merge(stored); err != nil || again.regs != u.regs {
			t.Fatalf("Store did not keep the registers (%v)", err)
		}
		if v[4] == encSparse {
			d, err := sparseToDense(v)
			if err != nil {
				t.Fatalf("Merge accepted what sparseToDense refused: %v", err)
			}
			var viaDense Union
			viaDense.Merge(d)
			if viaDense.regs != u.regs {
				t.Fatal("dense conversion changed registers")
			}
		}
	})
}
