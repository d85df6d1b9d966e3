package hll

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// registers decodes v's registers; ok is false when Count would call v
// corrupt.
func registers(t *testing.T, v []byte) [Registers]uint8 {
	t.Helper()
	var regs [Registers]uint8
	if v[4] == encDense {
		for i := range regs {
			regs[i] = denseGet(v[headerSize:], i)
		}
		return regs
	}
	if !walkSparse(v[headerSize:], func(first, n int, val uint8) {
		for i := first; i < first+n; i++ {
			regs[i] = val
		}
	}) {
		t.Fatalf("sparse value does not cover %d registers: % x", Registers, v[headerSize:])
	}
	return regs
}

// TestAddAgainstModel adds random elements and checks after every Add
// that the registers equal a plain array of maxima, that a sparse value
// stays within the sparse limit, and that Add says whether a register
// grew. (Byte-exact encoding is TestRedisDiffHLL's job.)
func TestAddAgainstModel(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 21))
			sparseMax := []int{DefaultSparseMaxBytes, 30, 200, 0}[seed%4]
			v := New()
			var model [Registers]uint8
			for step := range 3000 {
				elems := make([][]byte, rng.IntN(4))
				grows := false
				for i := range elems {
					elems[i] = fmt.Appendf(nil, "e%d", rng.IntN(20000))
					idx, cnt := registerOf(elems[i])
					if cnt > model[idx] {
						model[idx] = cnt
						grows = true
					}
				}
				if WouldChange(v, elems) != grows {
					t.Fatalf("step %d: WouldChange = %v, model says %v", step, !grows, grows)
				}
				out, changed, err := Add(v, elems, sparseMax)
				if err != nil {
					t.Fatal(err)
				}
				if changed != grows {
					t.Fatalf("step %d: changed = %v, model says %v", step, changed, grows)
				}
				if err := Check(out); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if out[4] == encSparse && len(out) > max(sparseMax, len(v)) {
					t.Fatalf("step %d: sparse value of %d bytes over limit %d", step, len(out), sparseMax)
				}
				if registers(t, out) != model {
					t.Fatalf("step %d: registers differ from the model", step)
				}
				v = out
			}
		})
	}
}

// TestEstimateAccuracy checks the estimator's error on distinct inputs
// stays within a few standard errors (1.04/sqrt(16384) = 0.81%).
func TestEstimateAccuracy(t *testing.T) {
	v := New()
	n := 0
	for _, target := range []int{10, 100, 1000, 10000, 100000} {
		var elems [][]byte
		for ; n < target; n++ {
			elems = append(elems, fmt.Appendf(nil, "item:%d", n))
		}
		var err error
		if v, _, err = Add(v, elems, DefaultSparseMaxBytes); err != nil {
			t.Fatal(err)
		}
		got, _, err := Count(v)
		if err != nil {
			t.Fatal(err)
		}
		if diff := float64(got) - float64(target); diff > 0.05*float64(target)+1 || -diff > 0.05*float64(target)+1 {
			t.Errorf("estimate of %d distinct = %d", target, got)
		}
	}
}

func TestSelfTest(t *testing.T) {
	if testing.Short() {
		t.Skip("adds 10,000 elements to a sparse and a dense HyperLogLog")
	}
	if err := SelfTest(); err != nil {
		t.Fatal(err)
	}
}

// TestDecode checks DECODE's text on a value with each opcode.
func TestDecode(t *testing.T) {
	v := append(New()[:headerSize], 0x00, 0x8d, 0x7f, 0xfc)
	got, err := Decode(v)
	if want := "z:1 v:4,2 Z:16381"; err != nil || got != want {
		t.Fatalf("Decode = %q, %v; want %q", got, err, want)
	}
	d, _ := ToDense(v)
	if _, err := Decode(d); err != ErrNotSparse {
		t.Fatalf("Decode of a dense value: %v", err)
	}
	regs := DenseRegisters(d)
	if regs[0] != 0 || regs[1] != 4 || regs[2] != 4 || regs[3] != 0 {
		t.Fatalf("registers %v", regs[:4])
	}
}
