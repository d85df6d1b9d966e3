package base

// Mix64 is the splitmix64 finalizer: a bijection of uint64 whose every
// output bit depends on every input bit. The bloom filter hashes keys with
// it, so it is part of the on-disk filter format and must never change;
// lsmgo-bench uses it to scatter key ranks.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
