package hll

// denseGet reads 6-bit register i of a dense body. The last register ends
// on a byte boundary, so a read never needs the byte past the body.
func denseGet(body []byte, i int) uint8 {
	bit := i * 6
	b, shift := bit/8, uint(bit%8)
	v := uint16(body[b]) >> shift
	if b+1 < len(body) {
		v |= uint16(body[b+1]) << (8 - shift)
	}
	return uint8(v & 63)
}

// densePut writes 6-bit register i of a dense body.
func densePut(body []byte, i int, val uint8) {
	bit := i * 6
	b, shift := bit/8, uint(bit%8)
	body[b] &^= 63 << shift
	body[b] |= val << shift
	if b+1 < len(body) {
		body[b+1] &^= 63 >> (8 - shift)
		body[b+1] |= val >> (8 - shift)
	}
}

// denseSet raises register i to count and reports whether it grew.
func denseSet(body []byte, i int, count uint8) bool {
	if denseGet(body, i) >= count {
		return false
	}
	densePut(body, i, count)
	return true
}
