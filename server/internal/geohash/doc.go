// Package geohash holds the geometry of Redis' geo commands: the 52-bit
// interleaved geohash that a geo sorted set keeps as each member's score,
// the decoding of a score back to coordinates, the haversine distance on
// Redis' sphere, the 11-character base-32 string of GEOHASH, and the
// choice of the (at most 9) cells whose score ranges hold every point a
// radius or box search can match.
//
// Every result is meant to equal Redis' (geohash.c, geohash_helper.c)
// bit for bit, since a geo key's scores are visible through ZSCORE and
// ZRANGE and its distances through GEODIST: the same ranges, the same
// order of floating-point operations, and the same truncations from
// double to integer. A score is a longitude and latitude cell at step 26:
// 26 bits of each, interleaved with the longitude's bit above the
// latitude's in every pair.
package geohash
