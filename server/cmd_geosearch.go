package server

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/lsmgo-dev/lsmgo/server/internal/geohash"
)

// geoFlags say which of the search commands a handler runs.
type geoFlags uint8

const (
	geoRadius         geoFlags = 1 << iota // GEORADIUS: the center and radius are positional
	geoRadiusByMember                      // GEORADIUSBYMEMBER: a member and radius are positional
	geoSearchCmd                           // GEOSEARCH: FROM… and BY… options
	geoStoreCmd                            // GEOSEARCHSTORE: the destination comes first
	geoNoStore                             // the _RO variants: no STORE option
)

// geoQuery is a parsed search.
type geoQuery struct {
	shape                         geohash.Shape
	withDist, withHash, withCoord bool
	fromMember, fromLonLat        bool
	byRadius, byBox               bool
	sort                          int // 0 none, 1 ascending, -1 descending
	any                           bool
	count                         int64 // 0: no limit
	store                         []byte
	storeDist                     bool
	storeEvent                    string // STORE's keyspace event
}

// geoMatch is a member a search found.
type geoMatch struct {
	member   []byte
	score    float64
	dist     float64
	lon, lat float64
}

// storeEvent is the keyspace event of a search's STORE, as Redis names it.
func (f geoFlags) storeEvent() string {
	if f&geoSearchCmd != 0 {
		return "geosearchstore"
	}
	return "georadiusstore"
}

// geoSearch returns the handler of a search command, which parses and
// answers as Redis' georadiusGeneric does: the source key is looked up
// first (WRONGTYPE before any argument error), the positional center
// next, then the options in order, each checked as it comes.
func geoSearch(flags geoFlags) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		src := 1
		if flags&geoStoreCmd != 0 {
			src = 2
		}
		// The locks: a search that may store takes the source's and every
		// destination's it names (found again after parsing); a read
		// pins a view.
		if flags&geoNoStore == 0 && flags&geoSearchCmd == 0 || flags&geoStoreCmd != 0 {
			held := c.lock(geoLockKeys(args, src, flags), 1)
			defer c.unlock(held)
		} else {
			defer c.pin()()
		}
		key := args[src]
		m, exists, err := c.getColl(key, typeZSet)
		if err != nil {
			return err
		}
		q, err := c.parseGeoQuery(args, flags, key, m, exists)
		if err != nil {
			return err
		}
		q.storeEvent = flags.storeEvent()
		if !exists {
			if q.store != nil {
				return c.storeColl(q.store, typeZSet, q.storeEvent, 0, nil)
			}
			c.wr.ArrayHeader(0)
			return nil
		}
		found, err := c.geoFind(key, m, &q)
		if err != nil {
			return err
		}
		return c.geoReply(q, found)
	}
}

// geoLockKeys returns the keys a storing search may write or read: the
// source and any argument that follows a STORE or STOREDIST option (a
// superset of the real destination, harmless for locking).
func geoLockKeys(args [][]byte, src int, flags geoFlags) [][]byte {
	if flags&geoStoreCmd != 0 {
		return args[1:3]
	}
	keys := [][]byte{args[src]}
	for i := src + 1; i+1 < len(args); i++ {
		if is(args[i], "STORE") || is(args[i], "STOREDIST") {
			keys = append(keys, args[i+1])
		}
	}
	return keys
}

// parseGeoQuery parses a search's arguments after the source key; m and
// exists are the source's, which FROMMEMBER and the positional member
// read.
func (c *conn) parseGeoQuery(args [][]byte, flags geoFlags, key []byte, m collMeta, exists bool) (q geoQuery, err error) {
	var base int
	switch {
	case flags&geoRadius != 0:
		base = 6
		if q.shape.Lon, q.shape.Lat, err = parseLonLat(args[2], args[3]); err != nil {
			return q, err
		}
		if q.shape.Radius, q.shape.Conversion, err = parseRadius(args[4], args[5]); err != nil {
			return q, err
		}
	case flags&geoRadiusByMember != 0:
		base = 5
		if !exists {
			break // Redis parses the rest to pick its reply for a missing key.
		}
		var ok bool
		if q.shape.Lon, q.shape.Lat, ok, err = c.memberPoint(key, m, args[2]); err != nil {
			return q, err
		} else if !ok {
			return q, redisError(msgNoMember)
		}
		if q.shape.Radius, q.shape.Conversion, err = parseRadius(args[3], args[4]); err != nil {
			return q, err
		}
	case flags&geoStoreCmd != 0:
		base = 3
		q.store = args[1]
	default:
		base = 2
	}
	search := flags&geoSearchCmd != 0
	opts := args[base:]
	for i := 0; i < len(opts); i++ {
		a, left := opts[i], len(opts)-1-i
		switch {
		case is(a, "WITHDIST"):
			q.withDist = true
		case is(a, "WITHHASH"):
			q.withHash = true
		case is(a, "WITHCOORD"):
			q.withCoord = true
		case is(a, "ANY"):
			q.any = true
		case is(a, "ASC"):
			q.sort = 1
		case is(a, "DESC"):
			q.sort = -1
		case is(a, "COUNT") && left >= 1:
			var ok bool
			if q.count, ok = parseInt(opts[i+1]); !ok {
				return q, redisError(msgNotInteger)
			}
			if q.count <= 0 {
				return q, redisError("ERR COUNT must be > 0")
			}
			i++
		case (is(a, "STORE") || is(a, "STOREDIST")) && left >= 1 && flags&(geoNoStore|geoSearchCmd) == 0:
			q.store, q.storeDist = opts[i+1], is(a, "STOREDIST")
			i++
		case is(a, "STOREDIST") && flags&geoStoreCmd != 0:
			q.storeDist = true
		case is(a, "FROMMEMBER") && left >= 1 && search && !q.fromLonLat:
			q.fromMember = true
			i++
			if !exists {
				continue
			}
			var ok bool
			if q.shape.Lon, q.shape.Lat, ok, err = c.memberPoint(key, m, opts[i]); err != nil {
				return q, err
			} else if !ok {
				return q, redisError(msgNoMember)
			}
		case is(a, "FROMLONLAT") && left >= 2 && search && !q.fromMember:
			if q.shape.Lon, q.shape.Lat, err = parseLonLat(opts[i+1], opts[i+2]); err != nil {
				return q, err
			}
			q.fromLonLat = true
			i += 2
		case is(a, "BYRADIUS") && left >= 2 && search && !q.byBox:
			if q.shape.Radius, q.shape.Conversion, err = parseRadius(opts[i+1], opts[i+2]); err != nil {
				return q, err
			}
			q.shape.Box, q.byRadius = false, true
			i += 2
		case is(a, "BYBOX") && left >= 3 && search && !q.byRadius:
			if q.shape.Width, q.shape.Height, q.shape.Conversion, err = parseBox(opts[i+1], opts[i+2], opts[i+3]); err != nil {
				return q, err
			}
			q.shape.Box, q.byBox = true, true
			i += 3
		default:
			return q, redisError(msgSyntax)
		}
	}
	name := string(args[0])
	switch {
	case q.store != nil && (q.withDist || q.withHash || q.withCoord):
		what := "STORE option in GEORADIUS"
		if flags&geoStoreCmd != 0 {
			what = "GEOSEARCHSTORE"
		}
		return q, redisError(fmt.Sprintf("ERR %s is not compatible with WITHDIST, WITHHASH and WITHCOORD options", what))
	case search && !q.fromMember && !q.fromLonLat:
		return q, redisError("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + name)
	case search && !q.byRadius && !q.byBox:
		return q, redisError("ERR exactly one of BYRADIUS and BYBOX can be specified for " + name)
	case q.any && q.count == 0:
		return q, redisError("ERR the ANY argument requires COUNT argument")
	}
	// COUNT keeps the nearest, unless ANY keeps the first found.
	if q.count != 0 && q.sort == 0 && !q.any {
		q.sort = 1
	}
	return q, nil
}

// parseRadius parses a radius and its unit.
func parseRadius(radiusArg, unitArg []byte) (radius, conversion float64, err error) {
	radius, ok := parseScore(radiusArg)
	if !ok {
		return 0, 0, redisError("ERR need numeric radius")
	}
	if radius < 0 {
		return 0, 0, redisError("ERR radius cannot be negative")
	}
	conversion, err = parseUnit(unitArg)
	return radius, conversion, err
}

// parseBox parses a box's width, height and unit.
func parseBox(widthArg, heightArg, unitArg []byte) (width, height, conversion float64, err error) {
	width, ok := parseScore(widthArg)
	if !ok {
		return 0, 0, 0, redisError("ERR need numeric width")
	}
	if height, ok = parseScore(heightArg); !ok {
		return 0, 0, 0, redisError("ERR need numeric height")
	}
	if height < 0 || width < 0 {
		return 0, 0, 0, redisError("ERR height or width cannot be negative")
	}
	conversion, err = parseUnit(unitArg)
	return width, height, conversion, err
}

// geoFind walks the score ranges of the query's cells, in Redis' order,
// and returns the members inside the shape, stopping at COUNT when ANY
// was given. As in Redis, a cell equal to the last one read is skipped:
// at the coarsest steps neighbours wrap around onto each other.
func (c *conn) geoFind(key []byte, m collMeta, q *geoQuery) ([]geoMatch, error) {
	limit := 0
	if q.any {
		limit = int(q.count)
	}
	cells := q.shape.Cells()
	var ranges [][2][]byte
	last := 0
	for i, cell := range cells {
		if cell.IsZero() || last != 0 && cell == cells[last] {
			continue
		}
		lo, hi := geohash.ScoreRange(cell)
		lower, upper := scoreRange{min: float64(lo), max: float64(hi), maxEx: true}.bounds()
		ranges = append(ranges, [2][]byte{lower, upper})
		last = i
	}
	var found []geoMatch
	err := c.s.ks.zwalkRanges(c.reader(), key, m, ranges, func(score float64, member []byte) bool {
		lon, lat := geohash.Decode(geohash.ScoreBits(score))
		if dist, in := q.shape.Contains(lon, lat); in {
			found = append(found, geoMatch{member: bytes.Clone(member), score: score, dist: dist, lon: lon, lat: lat})
		}
		return limit == 0 || len(found) < limit
	})
	return found, err
}

// geoReply sorts and cuts the matches as the query says, then replies
// with them or stores them.
func (c *conn) geoReply(q geoQuery, found []geoMatch) error {
	if q.sort != 0 {
		slices.SortStableFunc(found, func(a, b geoMatch) int {
			if a.dist == b.dist {
				return 0
			}
			if a.dist > b.dist == (q.sort > 0) {
				return 1
			}
			return -1
		})
	}
	if q.count > 0 && int64(len(found)) > q.count {
		found = found[:q.count]
	}
	for i := range found {
		found[i].dist /= q.shape.Conversion
	}
	if q.store != nil {
		items := make([]zmember, len(found))
		for i, f := range found {
			items[i] = zmember{member: f.member, score: f.score}
			if q.storeDist {
				items[i].score = f.dist
			}
		}
		return c.zstore(q.storeEvent, q.store, items)
	}
	c.wr.ArrayHeader(len(found))
	extra := 0
	for _, with := range []bool{q.withDist, q.withHash, q.withCoord} {
		if with {
			extra++
		}
	}
	for _, f := range found {
		if extra > 0 {
			c.wr.ArrayHeader(1 + extra)
		}
		c.wr.Bulk(f.member)
		if q.withDist {
			c.wr.BulkString(formatDistance(f.dist))
		}
		if q.withHash {
			c.wr.Int(int64(f.score))
		}
		if q.withCoord {
			c.wr.ArrayHeader(2)
			c.writeCoord(f.lon)
			c.writeCoord(f.lat)
		}
	}
	return nil
}
