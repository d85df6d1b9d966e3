// Package base holds the vocabulary every engine package shares: internal
// keys (a user key plus an 8-byte trailer of sequence number and kind), the
// key ordering, the internal iterator interface, expiry encoding and the
// corruption error type.
//
// Invariant: internal keys sort by user key ascending, then by trailer
// descending, so the newest version of a user key comes first.
package base

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// SeqNum is a sequence number. Every write gets a unique one; see Visible
// for which writes a reader sees.
type SeqNum uint64

// SeqNumMax is larger than any assigned sequence number (56 bits usable).
const SeqNumMax SeqNum = 1<<56 - 1

// Kind is the type of an entry.
type Kind uint8

// Entry kinds. The numeric values are part of the on-disk format.
const (
	// KindDelete is a tombstone.
	KindDelete Kind = 0
	// KindSet is a plain value.
	KindSet Kind = 1
	// KindSetExpiry is a value whose first 8 bytes are its expiry time
	// (little-endian Unix milliseconds) followed by the user value.
	KindSetExpiry Kind = 2
	// KindSetBlob is a value stored in a blob file: the entry's value is
	// the encoded blob.Pointer to it.
	KindSetBlob Kind = 3
	// KindSetExpiryBlob is KindSetBlob with an expiry: the entry's value is
	// the expiry time (as in KindSetExpiry) followed by the encoded
	// pointer, so expiry is decided without reading the blob.
	KindSetExpiryBlob Kind = 4
	// KindMax is the largest valid kind; seeking with it finds the newest
	// version at a sequence number.
	KindMax Kind = 4
)

// String names the kind for dumps and errors.
func (k Kind) String() string {
	switch k {
	case KindDelete:
		return "DEL"
	case KindSet:
		return "SET"
	case KindSetExpiry:
		return "SETEX"
	case KindSetBlob:
		return "SETBLOB"
	case KindSetExpiryBlob:
		return "SETEXBLOB"
	}
	return fmt.Sprintf("KIND(%d)", uint8(k))
}

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool { return k <= KindMax }

// HasExpiry reports whether entries of kind k begin their value with an
// expiry time (ExpiryLen bytes).
func (k Kind) HasExpiry() bool { return k == KindSetExpiry || k == KindSetExpiryBlob }

// IsBlob reports whether entries of kind k hold a pointer to a value in a
// blob file rather than the value itself.
func (k Kind) IsBlob() bool { return k == KindSetBlob || k == KindSetExpiryBlob }

// MakeTrailer packs a sequence number and kind.
func MakeTrailer(seq SeqNum, kind Kind) uint64 { return uint64(seq)<<8 | uint64(kind) }

// InternalKey is a user key with its trailer.
type InternalKey struct {
	UserKey []byte
	Trailer uint64
}

// MakeInternalKey builds an internal key.
func MakeInternalKey(userKey []byte, seq SeqNum, kind Kind) InternalKey {
	return InternalKey{UserKey: userKey, Trailer: MakeTrailer(seq, kind)}
}

// Seq returns the key's sequence number.
func (k InternalKey) Seq() SeqNum { return SeqNum(k.Trailer >> 8) }

// Kind returns the key's kind.
func (k InternalKey) Kind() Kind { return Kind(k.Trailer & 0xff) }

// Size is the encoded length.
func (k InternalKey) Size() int { return len(k.UserKey) + 8 }

// Encode writes the key into buf, which must have room for Size bytes, and
// returns the written prefix.
func (k InternalKey) Encode(buf []byte) []byte {
	n := copy(buf, k.UserKey)
	binary.LittleEndian.PutUint64(buf[n:], k.Trailer)
	return buf[:n+8]
}

// Append appends the encoded key to dst.
func (k InternalKey) Append(dst []byte) []byte {
	dst = append(dst, k.UserKey...)
	return binary.LittleEndian.AppendUint64(dst, k.Trailer)
}

// Clone returns a copy that shares no memory with k.
func (k InternalKey) Clone() InternalKey {
	return InternalKey{UserKey: append([]byte(nil), k.UserKey...), Trailer: k.Trailer}
}

// String formats the key for dumps: "key#seq,KIND".
func (k InternalKey) String() string {
	return fmt.Sprintf("%q#%d,%s", k.UserKey, k.Seq(), k.Kind())
}

// DecodeInternalKey splits an encoded internal key. ok is false when the
// input is shorter than a trailer or has an unknown kind.
func DecodeInternalKey(b []byte) (k InternalKey, ok bool) {
	if len(b) < 8 {
		return InternalKey{}, false
	}
	n := len(b) - 8
	k = InternalKey{UserKey: b[:n:n], Trailer: binary.LittleEndian.Uint64(b[n:])}
	return k, k.Kind().Valid()
}

// CompareUser orders user keys.
func CompareUser(a, b []byte) int { return bytes.Compare(a, b) }

// CompareInternal orders internal keys: user key ascending, trailer
// descending.
func CompareInternal(a, b InternalKey) int {
	if c := bytes.Compare(a.UserKey, b.UserKey); c != 0 {
		return c
	}
	switch {
	case a.Trailer > b.Trailer:
		return -1
	case a.Trailer < b.Trailer:
		return 1
	}
	return 0
}

// CompareEncoded orders two encoded internal keys without decoding them
// into structs; both must be at least 8 bytes long.
func CompareEncoded(a, b []byte) int {
	if c := bytes.Compare(a[:len(a)-8], b[:len(b)-8]); c != 0 {
		return c
	}
	ta := binary.LittleEndian.Uint64(a[len(a)-8:])
	tb := binary.LittleEndian.Uint64(b[len(b)-8:])
	switch {
	case ta > tb:
		return -1
	case ta < tb:
		return 1
	}
	return 0
}

// Visible reports whether an entry written at seq is visible to a reader
// at snapshot sequence readSeq. A reader sees entries strictly below its
// sequence number.
func Visible(seq, readSeq SeqNum) bool { return seq < readSeq }

// ExpiryLen is the size of the expiry prefix of a KindSetExpiry value.
const ExpiryLen = 8

// EncodeExpiryValue prefixes value with its expiry time in Unix ms.
func EncodeExpiryValue(dst []byte, expireAtMs int64, value []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(expireAtMs))
	return append(dst, value...)
}

// DecodeExpiryValue splits a KindSetExpiry value. ok is false when the value
// is too short to hold the prefix.
func DecodeExpiryValue(v []byte) (expireAtMs int64, value []byte, ok bool) {
	if len(v) < ExpiryLen {
		return 0, nil, false
	}
	return int64(binary.LittleEndian.Uint64(v)), v[ExpiryLen:], true
}

// ErrCorruption is matched, with errors.Is, by every error that reports
// damaged on-disk data.
var ErrCorruption = errors.New("lsmgo: corruption")

// CorruptionError describes damaged data: which file, where, and why.
// Offset is -1 when unknown.
type CorruptionError struct {
	File   string
	Offset int64
	Reason string
}

// Error formats the error with file and offset.
func (e *CorruptionError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("lsmgo: corruption in %s at offset %d: %s", e.File, e.Offset, e.Reason)
	}
	return fmt.Sprintf("lsmgo: corruption in %s: %s", e.File, e.Reason)
}

// Is makes errors.Is(err, ErrCorruption) true.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorruption }

// Corruptf builds a CorruptionError.
func Corruptf(file string, offset int64, format string, args ...any) error {
	return &CorruptionError{File: file, Offset: offset, Reason: fmt.Sprintf(format, args...)}
}

// InternalIterator walks internal keys in order. Positioning methods return
// whether the iterator is now on an entry. Key and Value are valid only
// until the next positioning call; callers copy what they keep. Error
// reports the first I/O or corruption error; an iterator that hits one
// becomes invalid.
type InternalIterator interface {
	// SeekGE moves to the first entry whose user key is >= key.
	SeekGE(key []byte) bool
	// SeekLT moves to the last entry whose user key is < key.
	SeekLT(key []byte) bool
	First() bool
	Last() bool
	Next() bool
	Prev() bool
	Valid() bool
	Key() InternalKey
	Value() []byte
	Error() error
	Close() error
}

// FileNum names a table, log or manifest file.
type FileNum uint64

// FileType is the kind of file in a DB directory.
type FileType int

// File types.
const (
	FileTypeLog FileType = iota
	FileTypeTable
	FileTypeManifest
	FileTypeCurrent
	FileTypeLock
	FileTypeOptions
	FileTypeTemp
	// FileTypeBlob holds large values outside the tree (internal/blob).
	FileTypeBlob
	// FileTypeRetainedLog is a WAL kept after its memtable was flushed,
	// for Options.WALRetainSize: recovery never reads it.
	FileTypeRetainedLog
)

// MakeFilename returns the file name (without directory) for a type and
// number: 000123.log, 000124.sst, MANIFEST-000005, CURRENT, LOCK, OPTIONS,
// 000007.tmp, 000008.blob, 000009.rlog.
func MakeFilename(t FileType, n FileNum) string {
	switch t {
	case FileTypeLog:
		return fmt.Sprintf("%06d.log", n)
	case FileTypeTable:
		return fmt.Sprintf("%06d.sst", n)
	case FileTypeManifest:
		return fmt.Sprintf("MANIFEST-%06d", n)
	case FileTypeCurrent:
		return "CURRENT"
	case FileTypeLock:
		return "LOCK"
	case FileTypeOptions:
		return "OPTIONS"
	case FileTypeTemp:
		return fmt.Sprintf("%06d.tmp", n)
	case FileTypeBlob:
		return fmt.Sprintf("%06d.blob", n)
	case FileTypeRetainedLog:
		return fmt.Sprintf("%06d.rlog", n)
	}
	panic("lsmgo: unknown file type")
}

// ParseFilename is the inverse of MakeFilename; ok is false for names that
// are not ours.
func ParseFilename(name string) (t FileType, n FileNum, ok bool) {
	switch name {
	case "CURRENT":
		return FileTypeCurrent, 0, true
	case "LOCK":
		return FileTypeLock, 0, true
	case "OPTIONS":
		return FileTypeOptions, 0, true
	}
	var num uint64
	var ext string
	if _, err := fmt.Sscanf(name, "MANIFEST-%d", &num); err == nil && name == MakeFilename(FileTypeManifest, FileNum(num)) {
		return FileTypeManifest, FileNum(num), true
	}
	dot := -1
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '.' {
			dot = i
			break
		}
	}
	if dot <= 0 {
		return 0, 0, false
	}
	for _, c := range name[:dot] {
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		num = num*10 + uint64(c-'0')
	}
	ext = name[dot+1:]
	switch ext {
	case "log":
		return FileTypeLog, FileNum(num), true
	case "sst":
		return FileTypeTable, FileNum(num), true
	case "tmp":
		return FileTypeTemp, FileNum(num), true
	case "blob":
		return FileTypeBlob, FileNum(num), true
	case "rlog":
		return FileTypeRetainedLog, FileNum(num), true
	}
	return 0, 0, false
}
