package luascript

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// structLib is Roberto Ierusalimschy's struct library as Redis ships it:
// pack, unpack and size over a format of
//
//	> < =    big, little, native (little) endian
//	!n       align fields to n bytes (default 8, the largest native)
//	b B h H  signed/unsigned char (1) and short (2)
//	l L T    signed/unsigned long and size_t (8)
//	i[n] I[n] signed/unsigned int of n bytes (default 4, at most 32)
//	f d      float and double
//	s        zero-terminated string
//	c[n]     n chars (c0: the string's length; unpacking, the previous
//	         number read)
//	x        one padding byte
func structLib(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	L.SetFuncs(t, map[string]lua.LGFunction{
		"pack":   structPack,
		"unpack": structUnpack,
		"size":   structSize,
	})
	return t
}

const (
	structMaxIntSize = 32
	structMaxAlign   = 8
)

// structFormat walks a format string, keeping endianness and alignment.
type structFormat struct {
	L      *lua.LState
	fn     string
	f      string
	i      int
	little bool
	align  int
}

func newStructFormat(L *lua.LState, fn string) *structFormat {
	return &structFormat{L: L, fn: fn, f: L.CheckString(1), little: true, align: 1}
}

// next returns the next option and its size, having applied any
// endianness and alignment controls; ok is false at the end.
func (sf *structFormat) next() (opt byte, size int, ok bool) {
	for sf.i < len(sf.f) {
		opt = sf.f[sf.i]
		sf.i++
		switch opt {
		case ' ':
		case '>':
			sf.little = false
		case '<', '=':
			sf.little = true
		case '!':
			a := sf.num(structMaxAlign)
			if a&(a-1) != 0 {
				sf.L.RaiseError("alignment %d is not a power of 2", a)
			}
			sf.align = a
		case 'b', 'B', 'x':
			return opt, 1, true
		case 'h', 'H':
			return opt, 2, true
		case 'l', 'L', 'T', 'd':
			return opt, 8, true
		case 'f':
			return opt, 4, true
		case 'c':
			return opt, sf.num(1), true
		case 'i', 'I':
			n := sf.num(4)
			if n > structMaxIntSize {
				sf.L.RaiseError("integral size %d is larger than limit of %d", n, structMaxIntSize)
			}
			return opt, n, true
		case 's':
			return opt, 0, true
		default:
			argError(sf.L, 1, sf.fn, "invalid format option '"+string(opt)+"'")
		}
	}
	return 0, 0, false
}

// num reads an optional decimal count.
func (sf *structFormat) num(def int) int {
	if sf.i >= len(sf.f) || sf.f[sf.i] < '0' || sf.f[sf.i] > '9' {
		return def
	}
	a := 0
	for sf.i < len(sf.f) && sf.f[sf.i] >= '0' && sf.f[sf.i] <= '9' {
		d := int(sf.f[sf.i] - '0')
		if a > (math.MaxInt32-d)/10 {
			sf.L.RaiseError("integral size overflow")
		}
		a = a*10 + d
		sf.i++
	}
	return a
}

// padding is how many bytes align a field of this size at offset pos.
func (sf *structFormat) padding(pos int, opt byte, size int) int {
	a := size
	if a <= 1 || opt == 'c' {
		return 0
	}
	if a > sf.align {
		a = sf.align
	}
	if a&(a-1) != 0 {
		argError(sf.L, 1, sf.fn, "format asks for alignment not power of 2")
	}
	return (a - pos&(a-1)) & (a - 1)
}

func isStructInt(opt byte) bool {
	switch opt {
	case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
		return true
	}
	return false
}

func structPack(L *lua.LState) int {
	sf := newStructFormat(L, "pack")
	var out []byte
	arg := 2
	for {
		opt, size, ok := sf.next()
		if !ok {
			break
		}
		for range sf.padding(len(out), opt, size) {
			out = append(out, 0)
		}
		switch {
		case isStructInt(opt):
			n := float64(L.CheckNumber(arg))
			arg++
			var v uint64
			if n < 0 {
				v = uint64(int64(n))
			} else {
				v = uint64(n)
			}
			out = appendStructInt(out, v, size, sf.little)
		case opt == 'x':
			out = append(out, 0)
		case opt == 'f':
			out = appendStructInt(out, uint64(math.Float32bits(float32(L.CheckNumber(arg)))), 4, sf.little)
			arg++
		case opt == 'd':
			out = appendStructInt(out, math.Float64bits(float64(L.CheckNumber(arg))), 8, sf.little)
			arg++
		case opt == 'c' || opt == 's':
			s := L.CheckString(arg)
			arg++
			if opt == 's' {
				out = append(append(out, s...), 0)
				break
			}
			if size == 0 {
				size = len(s)
			}
			if len(s) < size {
				argError(L, arg-1, "pack", "string too short")
			}
			out = append(out, s[:size]...)
		}
	}
	L.Push(lua.LString(out))
	return 1
}

// appendStructInt writes v in size bytes; bytes past the eighth are zero.
func appendStructInt(out []byte, v uint64, size int, little bool) []byte {
	buf := make([]byte, size)
	for i := range size {
		b := byte(0)
		if i < 8 {
			b = byte(v >> (8 * i))
		}
		if little {
			buf[i] = b
		} else {
			buf[size-1-i] = b
		}
	}
	return append(out, buf...)
}

func structUnpack(L *lua.LState) int {
	sf := newStructFormat(L, "unpack")
	data := []byte(L.CheckString(2))
	pos := L.OptInt(3, 1) - 1
	if pos < 0 {
		argError(L, 3, "unpack", "offset must be 1 or greater")
	}
	n := 0
	var last lua.LValue = lua.LNil
	push := func(v lua.LValue) {
		L.Push(v)
		last = v
		n++
	}
	need := func(size int) {
		if size > len(data) || pos > len(data)-size {
			argError(L, 2, "unpack", "data string too short")
		}
	}
	for {
		opt, size, ok := sf.next()
		if !ok {
			break
		}
		pos += sf.padding(pos, opt, size)
		need(size)
		switch {
		case isStructInt(opt):
			push(lua.LNumber(readStructInt(data[pos:pos+size], sf.little, opt >= 'a')))
		case opt == 'x':
		case opt == 'f':
			push(lua.LNumber(math.Float32frombits(uint32(readUint(data[pos:pos+4], sf.little)))))
		case opt == 'd':
			push(lua.LNumber(math.Float64frombits(readUint(data[pos:pos+8], sf.little))))
		case opt == 'c':
			if size == 0 {
				num, isNum := last.(lua.LNumber)
				if n == 0 || !isNum {
					L.RaiseError("format 'c0' needs a previous size")
				}
				size = int(num)
				L.Pop(1)
				n--
				need(size)
			}
			push(lua.LString(data[pos : pos+size]))
		case opt == 's':
			end := -1
			for i := pos; i < len(data); i++ {
				if data[i] == 0 {
					end = i
					break
				}
			}
			if end < 0 {
				L.RaiseError("unfinished string in data")
			}
			size = end - pos + 1
			push(lua.LString(data[pos:end]))
		}
		pos += size
	}
	L.Push(lua.LNumber(pos + 1))
	return n + 1
}

func readStructInt(b []byte, little, signed bool) float64 {
	var l uint64
	for i := range b {
		j := i
		if little {
			j = len(b) - 1 - i
		}
		l = l<<8 | uint64(b[j])
	}
	if !signed {
		return float64(l)
	}
	if shift := len(b)*8 - 1; shift < 64 {
		mask := ^uint64(0) << shift
		if l&mask != 0 {
			l |= mask
		}
	}
	return float64(int64(l))
}

func readUint(b []byte, little bool) uint64 {
	if little {
		return binary.LittleEndian.Uint64(append(b[:len(b):len(b)], make([]byte, 8-len(b))...))
	}
	return binary.BigEndian.Uint64(append(make([]byte, 8-len(b)), b...))
}

func structSize(L *lua.LState) int {
	sf := newStructFormat(L, "size")
	pos := 0
	for {
		opt, size, ok := sf.next()
		if !ok {
			break
		}
		if opt == 's' {
			argError(L, 1, "size", "option 's' has no fixed size")
		}
		if opt == 'c' && size == 0 {
			argError(L, 1, "size", "option 'c0' has no fixed size")
		}
		pos += sf.padding(pos, opt, size) + size
	}
	L.Push(lua.LNumber(pos))
	return 1
}
