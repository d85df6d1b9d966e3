package imgbed

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/internal/keylayout"
)

// Key prefixes; doc.go has the layout.
const (
	prefix        = keylayout.Image
	kindBlob      = 'B'
	kindThumb     = 'T'
	kindChunk     = 'C'
	kindPending   = 'P'
	kindImage     = 'I'
	kindRecent    = 'R'
	kindUsage     = 'Q'
	kindViews     = 'V'
	kindOwned     = 'O'
	kindAlbum     = 'A'
	kindMember    = 'M'
	kindMemberOf  = 'N'
	kindAlbumOf   = 'L'
	kindMarker    = 'Z'
	kindExpUsage  = 'E'
	kindResumable = 'U'
	kindOpen      = 'W'
	kindIssued    = 'K'
	kindIssuedBy  = 'J'
	sumLen        = 32
	genLen        = 8
	recordVersion = 1
)

// sum is a SHA-256; gen is a random generation of a blob's chunks. Both
// are stored in JSON as hex.
type sum [sumLen]byte
type gen [genLen]byte

func (s sum) String() string                { return hex.EncodeToString(s[:]) }
func (s sum) MarshalText() ([]byte, error)  { return hexText(s[:]), nil }
func (s *sum) UnmarshalText(b []byte) error { return unhexText(s[:], b) }
func (g gen) MarshalText() ([]byte, error)  { return hexText(g[:]), nil }
func (g *gen) UnmarshalText(b []byte) error { return unhexText(g[:], b) }

func hexText(b []byte) []byte { return hex.AppendEncode(nil, b) }

func unhexText(dst, b []byte) error {
	if hex.DecodedLen(len(b)) != len(dst) {
		return fmt.Errorf("imgbed: want %d hex digits, got %d", 2*len(dst), len(b))
	}
	_, err := hex.Decode(dst, b)
	return err
}

func key(kind byte, parts ...[]byte) []byte {
	n := 2
	for _, p := range parts {
		n += len(p)
	}
	return appendKey(make([]byte, 0, n), kind, parts...)
}

// appendKey appends key(kind, parts...) to dst: GETs build keys in
// buffers of their own.
func appendKey(dst []byte, kind byte, parts ...[]byte) []byte {
	dst = append(dst, prefix, kind)
	for _, p := range parts {
		dst = append(dst, p...)
	}
	return dst
}

func blobKey(s sum) []byte { return key(kindBlob, s[:]) }

// thumbKey names the thumbnail of s in format f at width w.
func thumbKey(s sum, f format, w int) []byte { return appendThumbKey(nil, s, f, w) }

func appendThumbKey(dst []byte, s sum, f format, w int) []byte {
	return binary.BigEndian.AppendUint16(appendKey(dst, kindThumb, s[:], []byte{byte(f)}), uint16(w))
}

func chunkKey(s sum, g gen, i int) []byte {
	return key(kindChunk, s[:], g[:], binary.BigEndian.AppendUint32(nil, uint32(i)))
}

func pendingKey(s sum, g gen) []byte { return key(kindPending, s[:], g[:]) }

func imageKey(id string) []byte { return key(kindImage, []byte(id)) }

// recentKey orders records newest first: the creation time is stored
// inverted.
func recentKey(created int64, id string) []byte {
	return key(kindRecent, newestFirst(created), []byte(id))
}

func usageKey(token string) []byte { return key(kindUsage, []byte(token)) }

// newestFirst is a key part that orders by creation time, newest first.
func newestFirst(created int64) []byte { return binary.BigEndian.AppendUint64(nil, ^uint64(created)) }

// ownedPrefix starts the index of a token's images, newest first: "my
// uploads".
func ownedPrefix(owner string) []byte { return key(kindOwned, []byte(owner), []byte{0}) }

func ownedKey(rec *record) []byte {
	return append(append(ownedPrefix(rec.Owner), newestFirst(rec.Created)...), rec.ID...)
}

func albumKey(id string) []byte { return key(kindAlbum, []byte(id)) }

// memberPrefix starts the images of an album, newest upload first;
// memberOfKey is the way back, from an image to its albums, so deleting
// the image can take it out of them.
func memberPrefix(album string) []byte { return key(kindMember, []byte(album), []byte{0}) }

func memberKey(album string, rec *record) []byte {
	return append(append(memberPrefix(album), newestFirst(rec.Created)...), rec.ID...)
}

func memberOfPrefix(id string) []byte { return key(kindMemberOf, []byte(id), []byte{0}) }

func memberOfKey(id, album string) []byte { return append(memberOfPrefix(id), album...) }

func viewsKey(id string) []byte { return key(kindViews, []byte(id)) }

// expUsageKey is one expiring image of token, which counts against the
// token's quota until it expires (usageKey counts the permanent ones).
func expUsageKey(token, id string) []byte {
	return key(kindExpUsage, []byte(token), []byte{0}, []byte(id))
}

// span returns the bounds of every key starting with p.
func span(p []byte) (lower, upper []byte) {
	upper = append([]byte(nil), p...)
	for i := len(upper) - 1; i >= 0; i-- {
		if upper[i] < 0xff {
			upper[i]++
			return p, upper[:i+1]
		}
	}
	return p, nil
}

// blobMeta describes the bytes of one original or thumbnail.
type blobMeta struct {
	V     int    `json:"v"`
	Store string `json:"store,omitempty"` // blobStore.kind of the store holding the bytes
	Gen   gen    `json:"gen"`
	Size  int64  `json:"size"`
	Chunk int    `json:"chunk"` // chunk size the bytes were cut with, in the DB
	// Refs counts the images without expiry pointing at the bytes.
	// ExpRefs counts those with one, and Expires (Unix nanoseconds) is the
	// latest of their expiries: an expired image is never counted down,
	// so once Expires has passed and Refs is 0 the bytes are dead (live)
	// and the compaction filter reclaims them.
	Refs    int64  `json:"refs,omitempty"`
	ExpRefs int64  `json:"exp_refs,omitempty"`
	Expires int64  `json:"expires,omitempty"`
	Mime    string `json:"mime"`
	Width   int    `json:"w"`
	Height  int    `json:"h"`
}

// live reports whether an image may still point at the bytes at now.
func (m *blobMeta) live(now time.Time) bool {
	return m.Refs > 0 || m.ExpRefs > 0 && now.UnixNano() < m.Expires
}

func (m *blobMeta) chunks() int {
	if m.Chunk <= 0 { // damaged metadata, or bytes kept outside the DB
		return 0
	}
	return int((m.Size + int64(m.Chunk) - 1) / int64(m.Chunk))
}

// record is one uploaded image: an id pointing at a blob.
type record struct {
	V          int    `json:"v"`
	ID         string `json:"id"`
	Sum        sum    `json:"sha256"`
	MD5        string `json:"md5"`
	OriginName string `json:"origin_name"`
	Size       int64  `json:"size"`
	Mime       string `json:"mime"`
	Ext        string `json:"ext"`
	Width      int    `json:"w"`
	Height     int    `json:"h"`
	Created    int64  `json:"created"` // Unix nanoseconds
	DeleteHash sum    `json:"del"`     // SHA-256 of the delete token
	Owner      string `json:"owner,omitempty"`
	// Expires is when the image stops being served (Unix nanoseconds),
	// 0 for never; its keys carry the same engine expiry. MaxViews > 0
	// deletes it after that many downloads of the original.
	Expires  int64 `json:"expires,omitempty"`
	MaxViews int64 `json:"max_views,omitempty"`
}

// expiry is rec's expiry as the engine takes it.
func (rec *record) expiry() time.Time {
	if rec.Expires == 0 {
		return time.Time{}
	}
	return time.Unix(0, rec.Expires)
}

// album is a named set of images of one owner, public under /a/{id}.
type album struct {
	V           int    `json:"v"`
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Owner       string `json:"owner"`
	Created     int64  `json:"created"` // Unix nanoseconds
}

// usage is what one token has stored.
type usage struct {
	Bytes int64 `json:"bytes"`
	Count int64 `json:"count"`
}

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only fixed struct types with encodable fields come here
	}
	return b
}

// decode parses a stored value; damaged bytes are an error, never a panic.
func decode(raw []byte, v any, what string) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("imgbed: damaged %s: %w", what, err)
	}
	return nil
}
