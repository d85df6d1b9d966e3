// Package keylayout names the first byte of every engine key that lsmgo
// serve writes, and who owns the keys under it. The Redis keyspace
// (package server) and the image host (package imgbed) share one engine
// DB; each iterates only its own ranges, so neither can see or delete the
// other's keys (FLUSHALL, SCAN, KEYS and DBSIZE walk only Data).
//
//	Data  'k' + user key                       one entry per Redis key: a type
//	                                           header and the string, or a
//	                                           collection's metadata
//	                                           (server/keyspace.go)
//	Elem  'e' + len(user key) (4, BE)          a collection element, under its
//	      + user key + version (8, BE) + elem  collection's version
//	                                           (server/collection.go; lists:
//	                                           list.go, sorted sets: zset.go,
//	                                           streams: stream.go)
//	Meta  'm' + name                           server metadata: "mformat" (the
//	                                           keyspace format), "mversions"
//	                                           (collection versions reserved)
//	Image 'i' + kind + …                       the image host's blobs, images and
//	                                           indexes (server/imgbed/doc.go)
//
// A new owner takes a byte not listed here and adds it here.
package keylayout

const (
	Data  = 'k'
	Elem  = 'e'
	Meta  = 'm'
	Image = 'i'
)
