package geohash

import "math"

// Shape is the area of a search: a circle (Box false) of Radius, or a box
// of Width by Height, around the point Lon, Lat. The sizes are in the
// user's unit; Conversion is meters per unit.
type Shape struct {
	Lon, Lat              float64
	Box                   bool
	Radius, Width, Height float64
	Conversion            float64
}

// Contains reports whether the point is in the shape, and its distance in
// meters from the shape's center. A box is measured as Redis measures it:
// the latitude distance against half the height, then the distance along
// the point's parallel against half the width.
func (s *Shape) Contains(lon, lat float64) (dist float64, ok bool) {
	if !s.Box {
		dist = Distance(s.Lon, s.Lat, lon, lat)
		return dist, dist <= s.Radius*s.Conversion
	}
	if latDistance(lat, s.Lat) > s.Height*s.Conversion/2 {
		return 0, false
	}
	if Distance(lon, lat, s.Lon, lat) > s.Width*s.Conversion/2 {
		return 0, false
	}
	return Distance(s.Lon, s.Lat, lon, lat), true
}

// boundingBox returns the longitudes and latitudes that bound the shape.
func (s *Shape) boundingBox() (minLon, minLat, maxLon, maxLat float64) {
	height, width := s.Conversion*s.Radius, s.Conversion*s.Radius
	if s.Box {
		height, width = s.Conversion*(s.Height/2), s.Conversion*(s.Width/2)
	}
	latDelta := radDeg(height / EarthRadius)
	lonDeltaTop := radDeg(width / EarthRadius / math.Cos(degRad(s.Lat+latDelta)))
	lonDeltaBottom := radDeg(width / EarthRadius / math.Cos(degRad(s.Lat-latDelta)))
	// A parallel is shorter the nearer the pole, so the widest part of
	// the box is its edge nearer the equator.
	lonDelta := lonDeltaTop
	if s.Lat < 0 {
		lonDelta = lonDeltaBottom
	}
	return s.Lon - lonDelta, s.Lat - latDelta, s.Lon + lonDelta, s.Lat + latDelta
}

// mercatorMax is half the length of the equator in Web Mercator meters.
const mercatorMax = 20037726.37

// estimateStep returns the coarsest step whose cells are about as wide as
// a search of radius meters near latitude lat, wider towards the poles.
func estimateStep(radius, lat float64) uint8 {
	if radius == 0 {
		return StepMax
	}
	step := 1
	for radius < mercatorMax {
		radius *= 2
		step++
	}
	step -= 2
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint8(min(max(step, 1), StepMax))
}

// Cells returns the cells a search of the shape must read, in Redis'
// order (the center's cell, then north, south, east, west, north-east,
// north-west, south-east, south-west); a zero Hash is a neighbour the
// shape cannot reach. Every point in the shape is in one of them, so a
// search reads only their score ranges (ScoreRange).
func (s *Shape) Cells() [9]Hash {
	minLon, minLat, maxLon, maxLat := s.boundingBox()
	radius := s.Radius
	if s.Box {
		radius = math.Sqrt((s.Width/2)*(s.Width/2) + (s.Height/2)*(s.Height/2))
	}
	radius *= s.Conversion
	step := estimateStep(radius, s.Lat)
	center, _ := encode(storeLon, storeLat, s.Lon, s.Lat, step)
	n := neighbours(center)
	// The estimate can be a step too fine when the shape is near its
	// cell's edge: then a neighbour does not reach the bounding box.
	if step > 1 && (decode(storeLon, storeLat, n.north).Lat.Max < maxLat ||
		decode(storeLon, storeLat, n.south).Lat.Min > minLat ||
		decode(storeLon, storeLat, n.east).Lon.Max < maxLon ||
		decode(storeLon, storeLat, n.west).Lon.Min > minLon) {
		step--
		center, _ = encode(storeLon, storeLat, s.Lon, s.Lat, step)
		n = neighbours(center)
	}
	area := decode(storeLon, storeLat, center)
	// Drop the neighbours beyond a side the center's cell already covers.
	if step >= 2 {
		if area.Lat.Min < minLat {
			n.south, n.southWest, n.southEast = Hash{}, Hash{}, Hash{}
		}
		if area.Lat.Max > maxLat {
			n.north, n.northEast, n.northWest = Hash{}, Hash{}, Hash{}
		}
		if area.Lon.Min < minLon {
			n.west, n.southWest, n.northWest = Hash{}, Hash{}, Hash{}
		}
		if area.Lon.Max > maxLon {
			n.east, n.southEast, n.northEast = Hash{}, Hash{}, Hash{}
		}
	}
	return [9]Hash{center, n.north, n.south, n.east, n.west, n.northEast, n.northWest, n.southEast, n.southWest}
}

type neighbourCells struct {
	north, south, east, west                   Hash
	northEast, northWest, southEast, southWest Hash
}

// neighbours returns the 8 cells around h at its step, wrapping around
// at the edges of the grid.
func neighbours(h Hash) neighbourCells {
	return neighbourCells{
		north:     h.move(0, 1),
		south:     h.move(0, -1),
		east:      h.move(1, 0),
		west:      h.move(-1, 0),
		northEast: h.move(1, 1),
		northWest: h.move(-1, 1),
		southEast: h.move(1, -1),
		southWest: h.move(-1, -1),
	}
}

// move returns the cell dLon columns east and dLat rows north of h
// (each -1, 0 or 1), modulo the grid's size. Like Redis, it masks to the
// step only the coordinates it moves: a cell past the grid's upper edge
// (a point on the edge, encode) keeps its extra bit in the coordinate
// that does not move, and with it the score range that holds the points
// stored on that edge.
func (h Hash) move(dLon, dLat int) Hash {
	const lonBits, latBits = 0xaaaaaaaaaaaaaaaa, 0x5555555555555555
	shift := 64 - 2*uint(h.Step)
	if dLon != 0 {
		h.Bits = stepBits(h.Bits&lonBits, lonBits>>shift, dLon) | h.Bits&latBits
	}
	if dLat != 0 {
		h.Bits = stepBits(h.Bits&latBits, latBits>>shift, dLat) | h.Bits&lonBits
	}
	return h
}

// stepBits adds d (-1 or 1) to the coordinate whose bits, within the
// step, are the ones set in mask, wrapping, and returns them. An
// increment first sets every bit outside the mask, so that its carry
// ripples through them to the coordinate's next bit; a decrement's
// borrow ripples through the zeros outside the mask by itself.
func stepBits(v, mask uint64, d int) uint64 {
	v &= mask
	if d > 0 {
		v = (v | ^mask) + 1
	} else {
		v--
	}
	return v & mask
}
