package geohash

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// The figures Redis gives for Redis' own documentation examples
// (redis-server 7.0.15 printed them; GEOPOS prints "%.17Lf").
func TestRedisFigures(t *testing.T) {
	for _, tc := range []struct {
		lon, lat       float64
		score          uint64
		hash           string
		decLon, decLat string
	}{
		{13.361389, 38.115556, 3479099956230698, "sqc8b49rny0", "13.36138933897018433", "38.11555639549629859"},
		{15.087269, 37.502669, 3479447370796909, "sqdtr74hyu0", "15.08726745843887329", "37.50266842333162032"},
		// A point on the upper edges gets the cell past the grid, as in
		// Redis, and decodes clamped to the limits.
		{180, 85.05112878, 13510798882111488, "bp05b5048p0", "180.00000000000000000", "85.05112877999999910"},
		{-180, -85.05112878, 0, "00bh0hbj200", "-179.99999731779098511", "-85.05112751263942528"},
	} {
		score, ok := Encode(tc.lon, tc.lat)
		if !ok || score != tc.score {
			t.Errorf("Encode(%v, %v) = %d, %v; want %d", tc.lon, tc.lat, score, ok, tc.score)
		}
		if got := String(score); got != tc.hash {
			t.Errorf("String(%d) = %s, want %s", score, got, tc.hash)
		}
		lon, lat := Decode(score)
		if got := strconv.FormatFloat(lon, 'f', 17, 64); got != tc.decLon {
			t.Errorf("Decode(%d) longitude %s, want %s", score, got, tc.decLon)
		}
		if got := strconv.FormatFloat(lat, 'f', 17, 64); got != tc.decLat {
			t.Errorf("Decode(%d) latitude %s, want %s", score, got, tc.decLat)
		}
	}
	// GEODIST Sicily Palermo Catania: 166274.1516 m.
	pl, pa := Decode(3479099956230698)
	cl, ca := Decode(3479447370796909)
	if got := strconv.FormatFloat(Distance(pl, pa, cl, ca), 'f', 4, 64); got != "166274.1516" {
		t.Errorf("Palermo-Catania = %s m, want 166274.1516", got)
	}
}

func TestEncodeRefusesOutside(t *testing.T) {
	for _, p := range [][2]float64{{180.0001, 0}, {-180.0001, 0}, {0, 85.05112879}, {0, -85.0511288}} {
		if _, ok := Encode(p[0], p[1]); ok {
			t.Errorf("Encode(%v) accepted", p)
		}
	}
}

// A decoded point lies in its cell and encodes back to the same score.
func TestDecodeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		score := rng.Uint64N(1 << 52)
		lon, lat := Decode(score)
		if back, ok := Encode(lon, lat); !ok || back != score {
			t.Fatalf("Decode(%d) = %v, %v, which encodes to %d", score, lon, lat, back)
		}
	}
}

// move agrees with moving the deinterleaved coordinates, modulo the grid.
func TestNeighbours(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100_000 {
		step := uint8(1 + rng.IntN(StepMax))
		size := uint64(1) << step
		h := Hash{Bits: rng.Uint64N(size * size), Step: step}
		lat, lon := deinterleave(h.Bits)
		dLon, dLat := rng.IntN(3)-1, rng.IntN(3)-1
		wantLat := (uint64(lat) + size + uint64(dLat)) % size
		wantLon := (uint64(lon) + size + uint64(dLon)) % size
		if got := h.move(dLon, dLat); got.Bits != interleave(uint32(wantLat), uint32(wantLon)) || got.Step != step {
			t.Fatalf("%+v moved (%d, %d) = %+v", h, dLon, dLat, got)
		}
	}
}

// Every point a shape contains has a score in one of the shape's cells:
// the property that lets a search read only their ranges.
func TestCellsCoverShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	units := []float64{1, 1000, 0.3048, 1609.34}
	for i := range 3000 {
		s := Shape{Lon: rng.Float64()*360 - 180, Lat: rng.Float64()*170 - 85, Conversion: units[rng.IntN(len(units))]}
		scale := []float64{10, 1000, 100_000, 5_000_000}[rng.IntN(4)] / s.Conversion
		if s.Box = rng.IntN(2) == 0; s.Box {
			s.Width, s.Height = rng.Float64()*scale, rng.Float64()*scale
		} else {
			s.Radius = rng.Float64() * scale
		}
		cells := s.Cells()
		// Points near the shape's center, most of them inside.
		for range 200 {
			d := scale * s.Conversion / EarthRadius * 57.3
			lon := s.Lon + (rng.Float64()*2-1)*d*3
			lat := s.Lat + (rng.Float64()*2-1)*d
			score, ok := Encode(lon, lat)
			if !ok {
				continue
			}
			plon, plat := Decode(score)
			if _, in := s.Contains(plon, plat); !in {
				continue
			}
			found := false
			for _, c := range cells {
				lo, hi := ScoreRange(c)
				if !c.IsZero() && score >= lo && score < hi {
					found = true
				}
			}
			if !found {
				t.Fatalf("shape %d %+v contains %v,%v (score %d) outside its cells %+v", i, s, plon, plat, score, cells)
			}
		}
	}
}

// A search centered on the grid's upper edge reads the score range of the
// points stored there, which lie past the grid (TestRedisFigures).
func TestCellsOnUpperEdge(t *testing.T) {
	edge, _ := Encode(180, 10.06653)
	s := Shape{Lon: 180, Lat: 10.931263, Radius: 199.75, Conversion: 1609.34}
	for _, c := range s.Cells() {
		if lo, hi := ScoreRange(c); !c.IsZero() && edge >= lo && edge < hi {
			return
		}
	}
	t.Errorf("no cell of %+v holds score %d", s, edge)
}

func TestScoreBits(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want uint64
	}{{0, 0}, {1.9, 1}, {-1, 1<<64 - 1}, {1 << 63, 1 << 63}, {1 << 64, 0}, {-(1 << 64), 1 << 63}} {
		if got := ScoreBits(tc.f); got != tc.want {
			t.Errorf("ScoreBits(%v) = %d, want %d", tc.f, got, tc.want)
		}
	}
}
