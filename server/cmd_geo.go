package server

import (
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/lsmgo-dev/lsmgo/server/internal/geohash"
)

// The geo commands keep points in sorted sets, as Redis does: a member's
// score is its 52-bit geohash (internal/geohash), so ZSCORE and ZRANGE on
// a geo key give Redis' numbers, and a search reads only the score ranges
// of the few cells around its shape (cmd_geosearch.go).

func init() {
	const g = "geo"
	rw, ro := flagWrite|flagDenyOOM, flagReadonly
	key1 := func(s spec) spec {
		s.firstKey, s.lastKey, s.step, s.group = 1, 1, 1, g
		return s
	}
	register(
		key1(spec{name: "geoadd", arity: -5, flags: rw, since: "3.2.0", run: cmdGeoAdd,
			summary: "Adds one or more members to a geospatial index. The key is created if it doesn't exist."}),
		key1(spec{name: "geodist", arity: -4, flags: ro, pipe: pipeView, since: "3.2.0", run: cmdGeoDist,
			summary: "Returns the distance between two members of a geospatial index."}),
		key1(spec{name: "geohash", arity: -2, flags: ro, pipe: pipeView, since: "3.2.0", run: cmdGeoHash,
			summary: "Returns members from a geospatial index as geohash strings."}),
		key1(spec{name: "geopos", arity: -2, flags: ro, pipe: pipeView, since: "3.2.0", run: cmdGeoPos,
			summary: "Returns the longitude and latitude of members from a geospatial index."}),
		key1(spec{name: "georadius", arity: -6, flags: rw | flagMovableKeys, since: "3.2.0", run: geoSearch(geoRadius),
			summary: "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result."}),
		key1(spec{name: "georadius_ro", arity: -6, flags: ro, pipe: pipeView, since: "3.2.10", run: geoSearch(geoRadius | geoNoStore),
			summary: "Returns members from a geospatial index that are within a distance from a coordinate."}),
		key1(spec{name: "georadiusbymember", arity: -5, flags: rw | flagMovableKeys, since: "3.2.0", run: geoSearch(geoRadiusByMember),
			summary: "Queries a geospatial index for members within a distance from a member, optionally stores the result."}),
		key1(spec{name: "georadiusbymember_ro", arity: -5, flags: ro, pipe: pipeView, since: "3.2.10", run: geoSearch(geoRadiusByMember | geoNoStore),
			summary: "Returns members from a geospatial index that are within a distance from a member."}),
		key1(spec{name: "geosearch", arity: -7, flags: ro, pipe: pipeView, since: "6.2.0", run: geoSearch(geoSearchCmd),
			summary: "Queries a geospatial index for members inside an area of a box or a circle."}),
		spec{name: "geosearchstore", arity: -8, flags: rw, firstKey: 1, lastKey: 2, step: 1, group: g, since: "6.2.0",
			run:     geoSearch(geoSearchCmd | geoStoreCmd),
			summary: "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result."},
	)
}

const msgNoMember = "ERR could not decode requested zset member"

// parseLonLat parses a longitude and a latitude as Redis'
// extractLongLatOrReply does: floats as ZADD reads scores, then within
// the geo limits.
func parseLonLat(lonArg, latArg []byte) (lon, lat float64, err error) {
	var ok bool
	if lon, ok = parseScore(lonArg); ok {
		lat, ok = parseScore(latArg)
	}
	if !ok {
		return 0, 0, redisError(msgNotFloat)
	}
	if !geohash.Valid(lon, lat) {
		return 0, 0, redisError(fmt.Sprintf("ERR invalid longitude,latitude pair %s,%s", cFixed(lon), cFixed(lat)))
	}
	return lon, lat, nil
}

// cFixed prints f as C's "%f" does.
func cFixed(f float64) string {
	if math.IsInf(f, 0) {
		if f < 0 {
			return "-inf"
		}
		return "inf"
	}
	return strconv.FormatFloat(f, 'f', 6, 64)
}

// parseUnit returns the meters in one unit of GEODIST and the searches.
func parseUnit(b []byte) (float64, error) {
	switch {
	case is(b, "M"):
		return 1, nil
	case is(b, "KM"):
		return 1000, nil
	case is(b, "FT"):
		return 0.3048, nil
	case is(b, "MI"):
		return 1609.34, nil
	}
	return 0, redisError("ERR unsupported unit provided. please use M, KM, FT, MI")
}

// cmdGeoAdd implements GEOADD key [NX|XX] [CH] lon lat member ... as
// Redis does: it checks the options and every point, then runs ZADD with
// each point's score.
func cmdGeoAdd(c *conn, cmd *command, args [][]byte) error {
	first := 2
	var nx, xx bool
	for ; first < len(args); first++ {
		a := args[first]
		if is(a, "NX") {
			nx = true
		} else if is(a, "XX") {
			xx = true
		} else if !is(a, "CH") {
			break
		}
	}
	points := args[first:]
	if len(points)%3 != 0 || nx && xx {
		return redisError(msgSyntax)
	}
	zargs := append([][]byte{[]byte("zadd")}, args[1:first]...)
	for i := 0; i < len(points); i += 3 {
		lon, lat, err := parseLonLat(points[i], points[i+1])
		if err != nil {
			return err
		}
		score, _ := geohash.Encode(lon, lat)
		zargs = append(zargs, strconv.AppendUint(nil, score, 10), points[i+2])
	}
	return zadd(false)(c, cmd, zargs)
}

// memberPoint reads the point of member of m at key: the center of the
// cell its score stands for; ok is false when it is not a member.
func (c *conn) memberPoint(key []byte, m collMeta, member []byte) (lon, lat float64, ok bool, err error) {
	score, in, err := c.s.ks.zscore(c.reader(), &c.elemBuf, key, m, member)
	if !in || err != nil {
		return 0, 0, false, err
	}
	lon, lat = geohash.Decode(geohash.ScoreBits(score))
	return lon, lat, true, nil
}

// cmdGeoDist implements GEODIST key member1 member2 [unit].
func cmdGeoDist(c *conn, _ *command, args [][]byte) error {
	conversion := 1.0
	switch {
	case len(args) == 5:
		var err error
		if conversion, err = parseUnit(args[4]); err != nil {
			return err
		}
	case len(args) > 5:
		return redisError(msgSyntax)
	}
	defer c.pin()()
	key := args[1]
	m, exists, err := c.getColl(key, typeZSet)
	if err != nil {
		return err
	}
	var lon1, lat1, lon2, lat2 float64
	ok := exists
	if ok {
		if lon1, lat1, ok, err = c.memberPoint(key, m, args[2]); err != nil {
			return err
		}
	}
	if ok {
		if lon2, lat2, ok, err = c.memberPoint(key, m, args[3]); err != nil {
			return err
		}
	}
	if !ok {
		c.wr.Null()
		return nil
	}
	c.wr.BulkString(formatDistance(geohash.Distance(lon1, lat1, lon2, lat2) / conversion))
	return nil
}

// formatDistance prints a distance as Redis does, with 4 decimals.
func formatDistance(d float64) string { return strconv.FormatFloat(d, 'f', 4, 64) }

// writeCoord writes a coordinate as Redis' addReplyHumanLongDouble does.
func (c *conn) writeCoord(f float64) { c.wr.DoubleText(formatLongDouble(big.NewFloat(f))) }

// cmdGeoHash implements GEOHASH key [member ...].
func cmdGeoHash(c *conn, _ *command, args [][]byte) error {
	return c.geoEach(args, func(score float64) { c.wr.BulkString(geohash.String(geohash.ScoreBits(score))) }, c.wr.Null)
}

// cmdGeoPos implements GEOPOS key [member ...].
func cmdGeoPos(c *conn, _ *command, args [][]byte) error {
	return c.geoEach(args, func(score float64) {
		lon, lat := geohash.Decode(geohash.ScoreBits(score))
		c.wr.ArrayHeader(2)
		c.writeCoord(lon)
		c.writeCoord(lat)
	}, c.wr.NullArray)
}

// geoEach replies with an array holding, for each member named in args,
// what found writes from its score, or what missing writes.
func (c *conn) geoEach(args [][]byte, found func(score float64), missing func()) error {
	defer c.pin()()
	key, members := args[1], args[2:]
	m, exists, err := c.getColl(key, typeZSet)
	if err != nil {
		return err
	}
	scores := make([]float64, len(members))
	in := make([]bool, len(members))
	for i, member := range members {
		if exists {
			if scores[i], in[i], err = c.s.ks.zscore(c.reader(), &c.elemBuf, key, m, member); err != nil {
				return err
			}
		}
	}
	c.wr.ArrayHeader(len(members))
	for i := range members {
		if in[i] {
			found(scores[i])
		} else {
			missing()
		}
	}
	return nil
}
