package bloom

// buildLegacy is the writer of the legacy layout, kept as the reference
// that MayContainLegacy is tested against: bitsPerKey*len(keys) bits
// (at least 64) rounded up to whole bytes, BitsPerKeyToProbes probes
// placed by double hashing over the whole array.
func buildLegacy(bitsPerKey int, keys [][]byte) []byte {
	nBits := max(len(keys)*bitsPerKey, 64)
	nBytes := (nBits + 7) / 8
	nBits = nBytes * 8
	probes := BitsPerKeyToProbes(bitsPerKey)
	filter := make([]byte, nBytes+1)
	filter[nBytes] = byte(probes)
	for _, k := range keys {
		h1, h2 := probeSeeds(Hash(k))
		for i := 0; i < probes; i++ {
			bit := h1 % uint64(nBits)
			filter[bit/8] |= 1 << (bit % 8)
			h1 += h2
		}
	}
	return filter
}
