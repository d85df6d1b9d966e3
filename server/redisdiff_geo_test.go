package server

import (
	"strconv"
)

func init() { diffGroups = append(diffGroups, diffGroup{"geo", 12, diffGeo}) }

// geoCenters are where the generated points cluster: an ordinary
// latitude, the equator, the antimeridian, the southern hemisphere and
// near the geo limit at the poles, so that searches cross cell, sign and
// wrap-around edges.
var geoCenters = [][2]float64{{13.36, 38.11}, {0.01, -0.02}, {179.9, 10}, {-58.4, -34.6}, {20, 84.9}, {-170, -84.5}}

// diffGeo generates the geo commands over keys of their own ("geo0" to
// "geo2"), which ZRANGE and ZSCORE compare score by score, and the shared
// keys (WRONGTYPE, and sorted sets whose scores are not geohashes).
func diffGeo(g *diffGen) diffCmd {
	key := g.pick("geo0", "geo1", "geo2", "geo0", "geo1", g.key(), "geo-missing")
	switch g.rng.IntN(22) {
	case 0, 1, 2, 3, 4:
		args := []string{"GEOADD", key}
		for g.rng.IntN(4) == 0 {
			args = append(args, g.pick("NX", "XX", "CH", "ch", "nx"))
		}
		for range 1 + g.rng.IntN(3) {
			lon, lat := g.geoPoint()
			args = append(args, lon, lat, g.geoMember())
		}
		if g.rng.IntN(20) == 0 {
			args = args[:len(args)-1]
		}
		return diffCmdOf(exact, args...)
	case 5, 6:
		args := []string{"GEODIST", key, g.geoMember(), g.geoMember()}
		if g.rng.IntN(2) == 0 {
			args = append(args, g.geoUnit())
		}
		if g.rng.IntN(20) == 0 {
			args = append(args, "extra")
		}
		return diffCmdOf(exact, args...)
	case 7:
		return diffCmdOf(exact, g.pick("GEOHASH", "GEOPOS"), key, g.geoMember(), g.geoMember(), g.geoMember())
	case 8:
		return diffCmdOf(exact, g.pick("GEOHASH", "GEOPOS"), key)
	case 9, 10, 11, 12:
		return diffCmdOf(exact, append([]string{"GEOSEARCH", key}, g.geoSearchArgs()...)...)
	case 13, 14:
		dst, opt := g.geoStoreDest(g.pick("STORE", "STOREDIST", "storedist"))
		args := append([]string{"GEOSEARCHSTORE", dst, key}, g.geoSearchArgs()...)
		if opt != "STORE" {
			args = append(args, opt)
		}
		return diffCmdOf(exact, args...)
	case 15, 16:
		name := g.pick("GEORADIUS", "GEORADIUS_RO", "georadius")
		lon, lat := g.geoPoint()
		args := append([]string{name, key, lon, lat}, g.geoDistance()...)
		return diffCmdOf(exact, append(args, g.geoRadiusOpts()...)...)
	case 17:
		name := g.pick("GEORADIUSBYMEMBER", "GEORADIUSBYMEMBER_RO")
		args := append([]string{name, key, g.geoMember()}, g.geoDistance()...)
		return diffCmdOf(exact, append(args, g.geoRadiusOpts()...)...)
	case 18, 19:
		return diffCmdOf(exact, "ZRANGE", key, "0", "-1", "WITHSCORES")
	case 20:
		return diffCmdOf(exact, "ZADD", key, g.pick("0", "-1", "1.5", "4503599627370495", "4503599627370496", "1e20"), g.geoMember())
	default:
		return diffCmdOf(exact, "DEL", key)
	}
}

func (g *diffGen) geoMember() string { return "p" + strconv.Itoa(g.rng.IntN(16)) }

// geoPoint is a longitude and a latitude near one of geoCenters, within
// about 200 km, or now and then one out of range or not a number.
func (g *diffGen) geoPoint() (lon, lat string) {
	if g.rng.IntN(25) == 0 {
		return g.pick("180.0001", "-181", "x", "inf", "0", "180", "-180", "1e400"),
			g.pick("85.05112879", "-86", "", "nan", "85.05112878", "-85.05112878", "0")
	}
	c := geoCenters[g.rng.IntN(len(geoCenters))]
	lo := min(max(c[0]+(g.rng.Float64()*2-1)*2, -180), 180)
	la := min(max(c[1]+(g.rng.Float64()*2-1)*1.5, -85.05), 85.05)
	return strconv.FormatFloat(lo, 'f', 6, 64), strconv.FormatFloat(la, 'f', 6, 64)
}

func (g *diffGen) geoUnit() string {
	return g.pick("m", "km", "ft", "mi", "KM", "Mi", "km", "km", "cm")
}

// geoDistance is a radius and its unit: mostly kilometres at the scale of
// the clusters, sometimes zero, huge, negative or malformed.
func (g *diffGen) geoDistance() []string {
	unit := g.geoUnit()
	switch g.rng.IntN(12) {
	case 0:
		return []string{g.pick("0", "-1", "x", "20000", "1e7", ""), unit}
	case 1:
		return []string{strconv.Itoa(g.rng.IntN(300_000)), "m"}
	}
	return []string{strconv.FormatFloat(g.rng.Float64()*300, 'f', 2, 64), unit}
}

// geoCommonOpts are the options every search takes, each with its
// arguments.
func (g *diffGen) geoCommonOpts() [][]string {
	var opts [][]string
	for g.rng.IntN(2) == 0 {
		switch g.rng.IntN(7) {
		case 0:
			opts = append(opts, []string{g.pick("ASC", "DESC", "asc")})
		case 1, 2:
			n := strconv.Itoa(1 + g.rng.IntN(5))
			if g.rng.IntN(10) == 0 {
				n = g.pick("0", "-1", "x")
			}
			opts = append(opts, []string{"COUNT", n})
			if g.rng.IntN(3) == 0 {
				opts = append(opts, []string{"ANY"})
			}
		case 3:
			if g.rng.IntN(4) == 0 {
				opts = append(opts, []string{"ANY"}) // without COUNT, mostly: an error
			}
		default:
			opts = append(opts, []string{g.pick("WITHDIST", "WITHHASH", "WITHCOORD", "withdist", "withcoord")})
		}
	}
	return opts
}

func joinGroups(groups [][]string) []string {
	var args []string
	for _, gr := range groups {
		args = append(args, gr...)
	}
	return args
}

// geoRadiusOpts are GEORADIUS' options, with STORE and STOREDIST now and
// then (followed by a read of the destination).
func (g *diffGen) geoRadiusOpts() []string {
	opts := joinGroups(g.geoCommonOpts())
	if g.rng.IntN(4) == 0 {
		dst, opt := g.geoStoreDest(g.pick("STORE", "STOREDIST"))
		opts = append(opts, opt, dst)
	}
	return opts
}

// geoStoreDest picks the destination of a storing search and queues a
// read of it. Distances stored by STOREDIST go to a key of their own and
// are read without scores: Redis 7.0 prints such scores with "%.17g",
// 7.2 (and lsmgo) in their shortest form. Geohash scores are integers,
// which both print alike.
func (g *diffGen) geoStoreDest(opt string) (dst, sameOpt string) {
	if is([]byte(opt), "STOREDIST") {
		g.pending = append(g.pending, diffCmdOf(exact, "ZRANGE", "geodist", "0", "-1"))
		return "geodist", opt
	}
	dst = g.pick("geo2", "geodst", g.key())
	g.pending = append(g.pending, diffCmdOf(exact, "ZRANGE", dst, "0", "-1", "WITHSCORES"))
	return dst, opt
}

// geoSearchArgs are GEOSEARCH's arguments after the key, shuffled, with
// one of the FROM and one of the BY options, now and then neither or
// both, or an unknown option.
func (g *diffGen) geoSearchArgs() []string {
	var groups [][]string
	if g.rng.IntN(15) != 0 {
		if g.rng.IntN(2) == 0 {
			groups = append(groups, []string{"FROMMEMBER", g.geoMember()})
		} else {
			lon, lat := g.geoPoint()
			groups = append(groups, []string{"FROMLONLAT", lon, lat})
		}
	}
	if g.rng.IntN(15) != 0 {
		if g.rng.IntN(2) == 0 {
			groups = append(groups, append([]string{"BYRADIUS"}, g.geoDistance()...))
		} else {
			d := g.geoDistance()
			groups = append(groups, []string{"BYBOX", d[0], g.geoDistance()[0], d[1]})
		}
	}
	groups = append(groups, g.geoCommonOpts()...)
	if g.rng.IntN(20) == 0 {
		groups = append(groups, []string{g.pick("FROMMEMBER", "BYRADIUS", "STORE", "BOGUS")})
	}
	g.rng.Shuffle(len(groups), func(i, j int) { groups[i], groups[j] = groups[j], groups[i] })
	return joinGroups(groups)
}
