package luascript

import (
	"math"
	"math/bits"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// bitLib is LuaBitOp 1.0, the bit library Redis ships: operations on
// 32-bit integers, arguments normalized as LuaBitOp normalizes them and
// results returned as signed 32-bit numbers.
func bitLib(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	L.SetFuncs(t, map[string]lua.LGFunction{
		"tobit":  func(L *lua.LState) int { return pushBits(L, toBits(L, 1)) },
		"bnot":   func(L *lua.LState) int { return pushBits(L, ^toBits(L, 1)) },
		"band":   bitFold(func(a, b uint32) uint32 { return a & b }),
		"bor":    bitFold(func(a, b uint32) uint32 { return a | b }),
		"bxor":   bitFold(func(a, b uint32) uint32 { return a ^ b }),
		"lshift": bitShift(func(x uint32, n uint) uint32 { return x << n }),
		"rshift": bitShift(func(x uint32, n uint) uint32 { return x >> n }),
		"arshift": bitShift(func(x uint32, n uint) uint32 {
			return uint32(int32(x) >> n)
		}),
		"rol":   bitShift(func(x uint32, n uint) uint32 { return bits.RotateLeft32(x, int(n)) }),
		"ror":   bitShift(func(x uint32, n uint) uint32 { return bits.RotateLeft32(x, -int(n)) }),
		"bswap": func(L *lua.LState) int { return pushBits(L, bits.ReverseBytes32(toBits(L, 1))) },
		"tohex": bitTohex,
	})
	return t
}

// toBits is LuaBitOp's barg: the number plus 2^52+2^51, whose low 32
// mantissa bits are then the number rounded to an integer modulo 2^32.
func toBits(L *lua.LState, n int) uint32 {
	x := float64(L.CheckNumber(n))
	return uint32(math.Float64bits(x + 6755399441055744.0))
}

func pushBits(L *lua.LState, b uint32) int {
	L.Push(lua.LNumber(int32(b)))
	return 1
}

func bitFold(op func(a, b uint32) uint32) lua.LGFunction {
	return func(L *lua.LState) int {
		acc := toBits(L, 1)
		for i := 2; i <= L.GetTop(); i++ {
			acc = op(acc, toBits(L, i))
		}
		return pushBits(L, acc)
	}
}

func bitShift(op func(x uint32, n uint) uint32) lua.LGFunction {
	return func(L *lua.LState) int {
		x := toBits(L, 1)
		n := uint(toBits(L, 2) & 31)
		return pushBits(L, op(x, n))
	}
}

func bitTohex(L *lua.LState) int {
	x := toBits(L, 1)
	n := int32(8)
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		n = int32(toBits(L, 2))
	}
	digits := "0123456789abcdef"
	if n < 0 {
		n = -n
		digits = strings.ToUpper(digits)
	}
	if n > 8 {
		n = 8
	}
	out := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		out[i] = digits[x&15]
		x >>= 4
	}
	L.Push(lua.LString(out))
	return 1
}
