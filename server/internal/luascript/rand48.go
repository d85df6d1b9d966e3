package luascript

import (
	lua "github.com/yuin/gopher-lua"
)

// rand48 is the generator behind Redis' math.random (redisLrand48): the
// 48-bit linear congruential generator of POSIX lrand48. Redis keeps one
// per Lua state, starting from the same state at every server start and
// carrying on across script calls, so a script's numbers are reproducible
// from the server's start; math.randomseed reseeds it.
type rand48 struct{ x uint64 }

const (
	rand48Mul  = 0x5DEECE66D
	rand48Add  = 0xB
	rand48Mask = 1<<48 - 1
	// defaultSeed is the generator's state before any seeding (Redis'
	// X2 X1 X0 = 0x1234 0xABCD 0x330E).
	defaultSeed = 0x1234ABCD330E
	// rand48Max is Redis' REDIS_LRAND48_MAX (INT32_MAX).
	rand48Max = 1<<31 - 1
)

func (r *rand48) seed(x uint64) { r.x = x & rand48Mask }

// seedInt is srand48: the seed in the high 32 bits above 0x330E.
func (r *rand48) seedInt(s int32) { r.seed(uint64(uint32(s))<<16 | 0x330E) }

// next returns lrand48's 31-bit value.
func (r *rand48) next() int32 {
	r.x = (r.x*rand48Mul + rand48Add) & rand48Mask
	return int32(r.x >> 17)
}

// luaRandom is Lua 5.1's math.random over rand48, as Redis patches it.
func (vm *VM) luaRandom(L *lua.LState) int {
	r := float64(vm.rand.next()%rand48Max) / float64(rand48Max)
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := L.CheckInt(1)
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(float64(int(r*float64(u)) + 1)))
	case 2:
		l, u := L.CheckInt(1), L.CheckInt(2)
		if l > u {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(float64(int(r*float64(u-l+1)) + l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

func (vm *VM) luaRandomseed(L *lua.LState) int {
	vm.rand.seedInt(int32(int64(L.CheckNumber(1))))
	return 0
}
