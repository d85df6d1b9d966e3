package hll

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Sparse reports whether v (checked with Check) uses the sparse encoding.
func Sparse(v []byte) bool { return v[4] == encSparse }

// ToDense returns v in the dense encoding (v itself when already dense),
// keeping the header; Redis' PFDEBUG TODENSE and GETREG convert so.
func ToDense(v []byte) ([]byte, error) {
	if v[4] == encDense {
		return v, nil
	}
	return sparseToDense(v)
}

// DenseRegisters returns the registers of a dense value.
func DenseRegisters(v []byte) []uint8 {
	regs := make([]uint8, Registers)
	for i := range regs {
		regs[i] = denseGet(v[headerSize:], i)
	}
	return regs
}

// ErrNotSparse is PFDEBUG DECODE's reply for a dense value.
var ErrNotSparse = errors.New("ERR HLL encoding is not sparse")

// Decode lists a sparse value's opcodes as PFDEBUG DECODE does:
// "z:len" for ZERO, "Z:len" for XZERO, "v:value,len" for VAL, separated
// by spaces. Damage is shown, not refused.
func Decode(v []byte) (string, error) {
	if v[4] != encSparse {
		return "", ErrNotSparse
	}
	body := v[headerSize:]
	var b strings.Builder
	for p := 0; p < len(body); {
		if p > 0 {
			b.WriteByte(' ')
		}
		span, size := opLen(body, p)
		switch op := body[p]; {
		case isZero(op):
			b.WriteString("z:" + strconv.Itoa(span))
		case isXZero(op):
			b.WriteString("Z:" + strconv.Itoa(span))
		default:
			b.WriteString("v:" + strconv.Itoa(int(valValue(op))) + "," + strconv.Itoa(span))
		}
		p += size
	}
	return b.String(), nil
}

// SelfTest checks the register packing and the estimator, as Redis'
// PFSELFTEST does: every dense register keeps any value written to it
// without disturbing its neighbours, and a sparse and a dense
// HyperLogLog fed the same 10,000 elements agree, with an error within five
// standard errors at each checkpoint.
func SelfTest() error {
	body := make([]byte, DenseSize-headerSize)
	var want [Registers]uint8
	seed := uint64(0x9e3779b97f4a7c15)
	for round := range 4 {
		for i := range want {
			seed = seed*6364136223846793005 + 1442695040888963407
			want[i] = uint8(seed>>58) & 63
			densePut(body, i, want[i])
		}
		for i, w := range want {
			if got := denseGet(body, i); got != w {
				return fmt.Errorf("TESTFAILED register %d holds %d, wrote %d (round %d)", i, got, w, round)
			}
		}
	}
	// The sparse one may grow without limit, so that it stays sparse.
	sparse := New()
	dense, err := sparseToDense(New())
	if err != nil {
		return err
	}
	relErr := 1.04 / math.Sqrt(Registers)
	var batch [][]byte
	for j, checkpoint := 1, 1; j <= 10_000; j++ {
		batch = append(batch, strconv.AppendInt(nil, int64(j), 10))
		if j != checkpoint {
			continue
		}
		checkpoint *= 10
		if sparse, _, err = Add(sparse, batch, math.MaxInt); err != nil {
			return err
		}
		if dense, _, err = Add(dense, batch, DefaultSparseMaxBytes); err != nil {
			return err
		}
		batch = batch[:0]
		a, _, err1 := Count(sparse)
		b, _, err2 := Count(dense)
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if a != b {
			return fmt.Errorf("TESTFAILED sparse and dense estimates differ at %d: %d, %d", j, a, b)
		}
		if math.Abs(float64(b)-float64(j)) > 5*relErr*float64(j)+1 {
			return fmt.Errorf("TESTFAILED estimate %d of %d elements is off by more than 5 standard errors", b, j)
		}
	}
	return nil
}
