package bitops

// Op is a BITOP operation.
type Op uint8

// The BITOP operations.
const (
	And Op = iota
	Or
	Xor
	Not
)

// Apply returns op over srcs (NOT takes exactly one), each read as if
// zero-padded to the longest; nil sources are missing keys (empty). The
// result is as long as the longest source.
func Apply(op Op, srcs [][]byte) []byte {
	n := 0
	for _, s := range srcs {
		n = max(n, len(s))
	}
	if n == 0 {
		return nil
	}
	out := make([]byte, n)
	copy(out, srcs[0])
	switch op {
	case Not:
		for i := range out {
			out[i] = ^out[i]
		}
	case And:
		for _, s := range srcs[1:] {
			for i := range out {
				if i < len(s) {
					out[i] &= s[i]
				} else {
					clear(out[i:])
					break
				}
			}
		}
	case Or:
		for _, s := range srcs[1:] {
			for i, c := range s {
				out[i] |= c
			}
		}
	case Xor:
		for _, s := range srcs[1:] {
			for i, c := range s {
				out[i] ^= c
			}
		}
	}
	return out
}
