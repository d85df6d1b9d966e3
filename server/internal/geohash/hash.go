package geohash

import "math"

// The coordinates a geo set accepts: all longitudes, and the latitudes of
// the Web Mercator projection (EPSG:3857), which stops short of the poles.
const (
	LonMin = -180.0
	LonMax = 180.0
	LatMin = -85.05112878
	LatMax = 85.05112878
)

// StepMax is the step of a stored score: 26 bits per coordinate, 52 in
// all, which a float64 score holds exactly.
const StepMax = 26

// Range is an interval of one coordinate.
type Range struct{ Min, Max float64 }

// Area is the rectangle a hash stands for.
type Area struct{ Lon, Lat Range }

// Hash is a cell at some step: Bits holds 2*Step bits, the longitude's and
// the latitude's interleaved. A zero Hash (Bits and Step 0) stands for no
// cell at all, as a pruned neighbour of a search.
type Hash struct {
	Bits uint64
	Step uint8
}

// IsZero reports the zero Hash.
func (h Hash) IsZero() bool { return h.Bits == 0 && h.Step == 0 }

var (
	// storeLon and storeLat are the ranges of a stored score.
	storeLon = Range{LonMin, LonMax}
	storeLat = Range{LatMin, LatMax}
	// stringLat is the latitude range of the standard geohash string,
	// which GEOHASH prints: the whole globe.
	stringLat = Range{-90, 90}
)

// Valid reports whether a geo set accepts the point.
func Valid(lon, lat float64) bool {
	return lon >= LonMin && lon <= LonMax && lat >= LatMin && lat <= LatMax
}

// encode returns the cell at step holding the point within the ranges;
// ok is false for a point the ranges or the geo limits exclude. The
// offsets are truncated to 32 bits as C truncates a double stored in a
// uint32_t, so a point on a range's upper edge gets the (out of range)
// cell 2^step, as in Redis.
func encode(lonR, latR Range, lon, lat float64, step uint8) (Hash, bool) {
	if !Valid(lon, lat) || lat < latR.Min || lat > latR.Max || lon < lonR.Min || lon > lonR.Max {
		return Hash{}, false
	}
	latOff := (lat - latR.Min) / (latR.Max - latR.Min)
	lonOff := (lon - lonR.Min) / (lonR.Max - lonR.Min)
	cells := float64(uint64(1) << step)
	latOff *= cells
	lonOff *= cells
	return Hash{Bits: interleave(uint32(latOff), uint32(lonOff)), Step: step}, true
}

// decode returns the rectangle of the cell h within the ranges.
func decode(lonR, latR Range, h Hash) Area {
	lat, lon := deinterleave(h.Bits)
	cells := float64(uint64(1) << h.Step)
	latScale := latR.Max - latR.Min
	lonScale := lonR.Max - lonR.Min
	return Area{
		Lat: Range{
			Min: latR.Min + (float64(lat)/cells)*latScale,
			Max: latR.Min + (float64(uint64(lat)+1)/cells)*latScale,
		},
		Lon: Range{
			Min: lonR.Min + (float64(lon)/cells)*lonScale,
			Max: lonR.Min + (float64(uint64(lon)+1)/cells)*lonScale,
		},
	}
}

// center is the middle of a, clamped to the geo limits.
func (a Area) center() (lon, lat float64) {
	lon = min(max((a.Lon.Min+a.Lon.Max)/2, LonMin), LonMax)
	lat = min(max((a.Lat.Min+a.Lat.Max)/2, LatMin), LatMax)
	return lon, lat
}

// Encode returns the score of a point: its cell at StepMax. ok is false
// when a geo set cannot hold the point.
func Encode(lon, lat float64) (score uint64, ok bool) {
	h, ok := encode(storeLon, storeLat, lon, lat, StepMax)
	return h.Bits, ok
}

// ScoreBits converts a sorted set score to the bits of a cell as Redis
// does, casting the double to an unsigned 64-bit integer: fractions are
// dropped, and a negative score wraps as x86-64's conversion makes it.
func ScoreBits(score float64) uint64 {
	switch {
	case math.IsNaN(score) || score <= -(1<<63):
		return 1 << 63 // x86-64's "integer indefinite"
	case score >= 1<<64:
		return 0 // the indefinite value, less 2^63 the wrong way round
	case score < 0:
		return uint64(int64(score))
	case score >= 1<<63:
		return uint64(score-(1<<63)) + 1<<63
	}
	return uint64(score)
}

// Decode returns the point a score stands for: the middle of its cell,
// clamped to the geo limits.
func Decode(score uint64) (lon, lat float64) {
	return decode(storeLon, storeLat, Hash{Bits: score, Step: StepMax}).center()
}

// String returns the 11-character geohash GEOHASH prints for a score:
// the point re-encoded over the whole globe's latitudes, 5 bits a
// character, the 11th character's missing bits taken as zero.
func String(score uint64) string {
	const alphabet = "0123456789bcdefghjkmnpqrstuvwxyz"
	lon, lat := Decode(score)
	h, _ := encode(storeLon, stringLat, lon, lat, StepMax)
	var out [11]byte
	for i := range out {
		idx := 0
		if i < 10 {
			idx = int(h.Bits>>(52-(i+1)*5)) & 0x1f
		}
		out[i] = alphabet[idx]
	}
	return string(out[:])
}

// ScoreRange returns the scores of the points in cell h: min inclusive,
// max exclusive.
func ScoreRange(h Hash) (min, max uint64) {
	shift := 52 - 2*uint(h.Step)
	return h.Bits << shift, (h.Bits + 1) << shift
}

// interleave spreads lat over the even bits and lon over the odd bits.
func interleave(lat, lon uint32) uint64 {
	return spread(lat) | spread(lon)<<1
}

// deinterleave inverts interleave.
func deinterleave(bits uint64) (lat, lon uint32) {
	return squeeze(bits), squeeze(bits >> 1)
}

// spread moves bit i of v to bit 2i.
func spread(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	x = (x | x<<4) & 0x0f0f0f0f0f0f0f0f
	x = (x | x<<2) & 0x3333333333333333
	x = (x | x<<1) & 0x5555555555555555
	return x
}

// squeeze moves bit 2i of x to bit i, dropping the odd bits.
func squeeze(x uint64) uint32 {
	x &= 0x5555555555555555
	x = (x | x>>1) & 0x3333333333333333
	x = (x | x>>2) & 0x0f0f0f0f0f0f0f0f
	x = (x | x>>4) & 0x00ff00ff00ff00ff
	x = (x | x>>8) & 0x0000ffff0000ffff
	x = (x | x>>16) & 0x00000000ffffffff
	return uint32(x)
}
