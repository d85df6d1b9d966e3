package geohash

import "math"

// EarthRadius is the radius in meters of the sphere Redis measures on.
const EarthRadius = 6372797.560856

func degRad(deg float64) float64 { return deg * (math.Pi / 180.0) }
func radDeg(rad float64) float64 { return rad / (math.Pi / 180.0) }

// latDistance is the distance between two latitudes on one meridian.
func latDistance(lat1, lat2 float64) float64 {
	return EarthRadius * math.Abs(degRad(lat2)-degRad(lat1))
}

// Distance is the haversine distance in meters between two points; on
// one meridian it is the simpler latitude distance, as in Redis.
func Distance(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r, lon2r := degRad(lon1), degRad(lon2)
	v := math.Sin((lon2r - lon1r) / 2)
	if v == 0 {
		return latDistance(lat1, lat2)
	}
	lat1r, lat2r := degRad(lat1), degRad(lat2)
	u := math.Sin((lat2r - lat1r) / 2)
	a := u*u + math.Cos(lat1r)*math.Cos(lat2r)*v*v
	return 2.0 * EarthRadius * math.Asin(math.Sqrt(a))
}
