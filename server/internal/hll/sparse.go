package hll

// Sparse opcodes. A sparse body is a sequence of runs covering the
// registers in index order.
const (
	zeroMaxLen  = 64    // longest run of one ZERO opcode
	xzeroMaxLen = 16384 // longest run of one XZERO opcode
	valMaxValue = 32    // largest value a VAL opcode holds
	valMaxLen   = 4     // longest run of one VAL opcode
)

func isZero(op byte) bool  { return op&0xc0 == 0 }
func isXZero(op byte) bool { return op&0xc0 == 0x40 }
func isVal(op byte) bool   { return op&0x80 != 0 }

func valValue(op byte) uint8 { return (op>>2)&0x1f + 1 }
func valLen(op byte) int     { return int(op&3) + 1 }
func valOp(value uint8, n int) byte {
	return 0x80 | (value-1)<<2 | byte(n-1)
}

// xzeroLen reads the XZERO opcode at p. Its second byte may lie past the
// end of a truncated body; Redis then reads the string's NUL terminator,
// so a missing byte reads as zero here too.
func xzeroLen(body []byte, p int) int {
	lo := 0
	if p+1 < len(body) {
		lo = int(body[p+1])
	}
	return int(body[p]&0x3f)<<8 | lo + 1
}

// appendZeroRun appends opcodes for n zero registers (n <= Registers):
// one ZERO opcode up to 64, else one XZERO.
func appendZeroRun(dst []byte, n int) []byte {
	if n <= zeroMaxLen {
		return append(dst, byte(n-1))
	}
	n--
	return append(dst, 0x40|byte(n>>8), byte(n))
}

// opLen returns the register count and byte length of the opcode at p.
func opLen(body []byte, p int) (span, size int) {
	switch op := body[p]; {
	case isZero(op):
		return int(op) + 1, 1
	case isXZero(op):
		return xzeroLen(body, p), 2
	default:
		return valLen(op), 1
	}
}

// walkSparse calls fn for each VAL run of a sparse body and reports
// whether the runs cover exactly Registers registers. Like Redis (since
// the fix for CVE-2025-32023), any run that would pass the last register
// makes the body invalid, whatever follows.
func walkSparse(body []byte, fn func(first, n int, value uint8)) bool {
	idx := 0
	for p := 0; p < len(body); {
		span, size := opLen(body, p)
		if idx+span > Registers {
			return false
		}
		if isVal(body[p]) {
			fn(idx, span, valValue(body[p]))
		}
		idx += span
		p += size
	}
	return idx == Registers
}

// sparseToDense converts a sparse value to a dense one, keeping the
// header's cached cardinality.
func sparseToDense(v []byte) ([]byte, error) {
	out := make([]byte, DenseSize)
	copy(out, v[:headerSize])
	out[4] = encDense
	body := out[headerSize:]
	if !walkSparse(v[headerSize:], func(first, n int, value uint8) {
		for i := first; i < first+n; i++ {
			densePut(body, i, value)
		}
	}) {
		return nil, ErrCorrupt
	}
	return out, nil
}

// sparseSet raises register index to count in sparse value v, editing the
// opcode sequence as Redis does so that the bytes match: split the run
// holding the register into at most three runs, convert to dense when the
// value does not fit a VAL opcode or the value would outgrow sparseMax,
// then merge adjacent equal VAL runs near the edit.
func sparseSet(v []byte, index int, count uint8, sparseMax int) ([]byte, bool, error) {
	if count > valMaxValue {
		return promote(v, index, count)
	}
	body := v[headerSize:]
	// Find the opcode covering index, and the one before it.
	first, p, prev, span, size := 0, 0, -1, 0, 0
	for p < len(body) {
		span, size = opLen(body, p)
		if index <= first+span-1 {
			break
		}
		prev = p
		p += size
		first += span
	}
	if p >= len(body) {
		return nil, false, ErrCorrupt
	}
	op := body[p]
	switch {
	case isVal(op) && valValue(op) >= count:
		return v, false, nil
	case (isVal(op) || isZero(op)) && span == 1:
		body[p] = valOp(count, 1)
		return mergeVals(v, prev), true, nil
	}

	// The general case: split the run at p.
	var seq [5]byte
	n := seq[:0]
	last := first + span - 1
	if isVal(op) {
		cur := valValue(op)
		if index != first {
			n = append(n, valOp(cur, index-first))
		}
		n = append(n, valOp(count, 1))
		if index != last {
			n = append(n, valOp(cur, last-index))
		}
	} else {
		if index != first {
			n = appendZeroRun(n, index-first)
		}
		n = append(n, valOp(count, 1))
		if index != last {
			n = appendZeroRun(n, last-index)
		}
	}
	delta := len(n) - size
	if delta > 0 && len(v)+delta > sparseMax {
		return promote(v, index, count)
	}
	// A truncated final XZERO makes next pass the end; the result is then
	// cut to the length Redis computes, as it is there.
	next := min(p+size, len(body))
	out := make([]byte, 0, len(v)+len(n))
	out = append(out, v[:headerSize+p]...)
	out = append(out, n...)
	out = append(out, body[next:]...)
	out = out[:len(v)+delta]
	return mergeVals(out, prev), true, nil
}

// promote converts v to dense and sets the register there; the register
// necessarily grows, since sparse values stay below count.
func promote(v []byte, index int, count uint8) ([]byte, bool, error) {
	d, err := sparseToDense(v)
	if err != nil {
		return nil, false, err
	}
	return d, denseSet(d[headerSize:], index, count), nil
}

// mergeVals joins adjacent VAL opcodes of equal value whose runs fit one
// opcode, scanning at most five opcodes from prev (the opcode before the
// edit, or the start), exactly as far as Redis scans.
func mergeVals(v []byte, prev int) []byte {
	body := v[headerSize:]
	p := max(prev, 0)
	for scan := 5; p < len(body) && scan > 0; scan-- {
		op := body[p]
		if isXZero(op) {
			p += 2
			continue
		}
		if isZero(op) {
			p++
			continue
		}
		if p+1 < len(body) && isVal(body[p+1]) && valValue(op) == valValue(body[p+1]) {
			if n := valLen(op) + valLen(body[p+1]); n <= valMaxLen {
				body[p] = valOp(valValue(op), n)
				copy(body[p+1:], body[p+2:])
				body = body[:len(body)-1]
				continue
			}
		}
		p++
	}
	return v[:headerSize+len(body)]
}
