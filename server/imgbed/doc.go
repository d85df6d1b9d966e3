// Package imgbed is lsmgo's image host: it accepts image uploads over HTTP,
// stores them in an lsmgo DB through the public engine API only, and
// serves them back under short, unguessable, permanent links, with
// thumbnails, a web page and configuration files for uploader clients.
//
// # Storage layout
//
// Every key starts with 'i' (keylayout.Image), a prefix byte the Redis
// keyspace of package server never uses (server/internal/keylayout has
// every prefix and its owner), so FLUSHALL, SCAN, KEYS and DBSIZE over
// RESP, which iterate only the 'k' range, never see or delete an image;
// images in turn never iterate outside 'i'.
//
//	"iB" sha256                     blob metadata of an original (JSON)
//	"iT" sha256 format width(2)     blob metadata of a thumbnail (JSON)
//	"iC" sha256 gen(8) index(4)     one chunk (at most ChunkSize bytes) of a blob kept in the DB
//	"iP" sha256 gen(8)              this generation's bytes are not referenced; the value
//	                                names the blob store holding them ("" the DB, "s3")
//	"iI" id                         image record: id -> sha256, names, tokens (JSON)
//	"iR" ^created(8) id             recent-uploads index, newest first
//	"iQ" token name                 per-token usage (bytes and count) of permanent images, for quotas
//	"iE" token 0 id                 size of one expiring image of a token (quota), with its expiry
//	"iV" id                         downloads so far of a view-limited image, with its expiry
//	"iO" token 0 ^created(8) id     a token's images, newest first ("my uploads")
//	"iA" album                      album: name, description, owner (JSON)
//	"iL" token 0 ^created(8) album  a token's albums, newest first
//	"iM" album 0 ^created(8) id     an album's images, newest upload first
//	"iN" id 0 album                 the albums of an image, so deleting it leaves them
//	"iZ" name                       markers of one-time upgrades ("owner-index": every record indexed)
//	"iU" upload                     a resumable (tus) upload: offset, length, owner, outcome (JSON),
//	                                with an engine expiry; its bytes are in a file (resumable.go)
//	"iK" sha256(token)              the name a token issued by Lsky's login acts as (tokens.go)
//	"iJ" name 0 sha256(token)       the tokens issued to a name, which Lsky's logout revokes
//
// The content hash is the identity of the bytes: identical uploads share
// one blob whose metadata counts its references (one per image record).
// Each stored copy of a blob's bytes gets a random generation, so the
// chunks of a blob being deleted and those of a new upload of the same
// bytes never share keys.
//
// # Expiry
//
// An image with an expiry has its record, recent-index entry, view count
// and quota entry written with that expiry as the engine's TTL: from that
// moment they read as absent, everywhere at once, and compactions drop
// them. Blob metadata never expires in the engine, because identical
// uploads with other expiries share it; it counts permanent references
// (Refs) and expiring ones (ExpRefs, with the latest expiry, Expires),
// never counted down when an image expires. Bytes whose metadata is no
// longer live (blobMeta.live) are reclaimed by the compaction filter
// (NewCompactionFilter, filter.go), which drops the chunks that no live
// metadata or pending marker names, and then metadata whose chunks are
// gone, with no scan and no request involved. An upload of such bytes
// before that happens stores them afresh and discards the old copy and
// its thumbnails.
//
// # Blob stores
//
// A blob's bytes are kept by a blob store (blobStore): the DB itself, as
// the chunks above, or an S3-compatible bucket (Config.BlobStore), as one
// object per generation named <prefix>/<sha256>/<gen>. Everything else —
// records, reference counts, thumbnails made, pending markers — is in the
// DB whatever the store, and each blob's metadata names the store holding
// its bytes, so changing the configuration leaves older blobs readable.
// By default thumbnails stay in the DB even when originals go to S3: they
// are small, hot, and keep being served while S3 is down.
//
// # Invariants
//
//   - An image becomes visible in one engine batch that writes its record
//     and its blob's metadata (or the bumped reference count). The chunks
//     of an image of at most one batch (1 MiB) kept in the DB are in that
//     same batch; any other image's bytes were stored before (in earlier
//     batches, or as an S3 object) after a pending marker for their
//     generation, which the visible batch deletes. A crash or a failing S3
//     therefore never shows half an image: bytes without metadata keep
//     their pending marker and New reclaims them (an S3 object whose
//     delete fails keeps its marker until a later start).
//   - Deleting the last reference removes the record and the blob metadata
//     (and its thumbnails' metadata) in one batch that also writes pending
//     markers for their generations; the chunks go afterwards, and New
//     finishes the job after a crash.
//   - Reads of one response from the DB go through one engine Snapshot,
//     so a delete racing with a download never truncates it; in S3 the
//     generation's object is deleted only after its metadata, and S3 lets
//     a GET that started finish.
//   - The type of an upload comes from its magic bytes; its dimensions
//     come from its header, checked against the pixel limit before any
//     decode, and its structure (chunks, segments, blocks up to the end
//     marker) is walked without decoding pixels.
//   - A resumable upload's offset is committed only after the bytes it
//     covers are fsynced in its file, and its bytes become an image only
//     when all are in, through the same checks and store as any upload.
//   - Uploads by URL dial only public addresses unless configured
//     otherwise, checked per connection after name resolution.
//   - Memory per upload is bounded (a head buffer, a copy buffer and one
//     engine batch of chunks) and the number of uploads reading bodies at
//     once is bounded, whatever the body sizes.
package imgbed
