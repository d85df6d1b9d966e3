// Package keylayout names the first byte of every engine key that lsmgo
// serve writes, and who owns the keys under it. The Redis keyspace
// (package server) and the image host (package imgbed) share one engine
// DB; each iterates only its own ranges, so neither can see or delete the
// other's keys (FLUSHALL, SCAN, KEYS and DBSIZE walk only Data and
// NSData).
//
// The Redis keyspace lives in namespaces: each logical database (SELECT
// 0 … databases-1) maps to a namespace id, and the map, kept under Meta
// "mdbs", is what SWAPDB swaps and FLUSHDB points at a fresh id, so
// neither touches a key. Namespace 0 keeps the layout lsmgo had before it
// had databases (Data and Elem), so an old directory is namespace 0 mapped
// to database 0; every other namespace n puts its 4-byte big-endian id
// after its own prefix byte (NSData, NSElem). Ids are never reused: the
// keys of a namespace that no database maps to are dead for good, and the
// server's compaction filter drops them.
//
//	Data   'k' + user key                      namespace 0: one entry per
//	                                           Redis key, a type header and
//	                                           the string, or a collection's
//	                                           metadata (server/keyspace.go)
//	Elem   'e' + len(user key) (4, BE)         namespace 0: a collection
//	       + user key + version (8, BE) + elem element, under its
//	                                           collection's version
//	                                           (server/collection.go; lists:
//	                                           list.go, sorted sets: zset.go,
//	                                           streams: stream.go)
//	NSData 'n' + ns (4, BE) + user key         Data of namespace ns >= 1
//	NSElem 'o' + ns (4, BE) + len(user key)    Elem of namespace ns >= 1
//	       (4, BE) + user key + version (8,
//	       BE) + elem
//	Meta   'm' + name                          server metadata: "mformat" (the
//	                                           keyspace format), "mversions"
//	                                           (collection versions reserved),
//	                                           "mdbs" (next namespace id (4,
//	                                           BE), then the namespace of each
//	                                           database (4, BE each);
//	                                           server/databases.go)
//	Image  'i' + kind + …                      the image host's blobs, images and
//	                                           indexes (server/imgbed/doc.go)
//
// A new owner takes a byte not listed here and adds it here.
package keylayout

const (
	Data   = 'k'
	Elem   = 'e'
	NSData = 'n'
	NSElem = 'o'
	Meta   = 'm'
	Image  = 'i'
)
