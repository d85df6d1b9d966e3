// Package record owns the record log format shared by write-ahead log files and
// the MANIFEST: a file is a sequence of BlockSize blocks, each record is cut
// into fragments that never cross a block boundary, and every fragment
// carries a 7-byte header with a masked CRC-32C over its type and payload.
// doc/format.md ("Record log format") describes the bytes.
//
// Invariants:
//   - The Reader never returns a record unless every fragment of it passed
//     its checksum and the fragments arrived in FULL or FIRST, MIDDLE...,
//     LAST order.
//   - Damage is classified, not guessed at: when the Reader meets a bad
//     fragment it scans the rest of the file for a fragment with a good
//     checksum that begins a record (FULL or FIRST). If there is none, the
//     damage is a torn tail left by an interrupted write, so Next reports
//     io.EOF and TornTail says where the tail began. If there is one, the
//     writer went on after the damaged bytes, so Next returns a
//     *base.CorruptionError naming the offset, and Damage says where the
//     damaged record begins. Whether such damage is a crash or lost
//     durable data is for the caller to decide: in the unsynced end of a
//     log, a power loss can leave pages lost before pages kept.
//   - A fragment with a good checksum that is out of sequence (MIDDLE or
//     LAST without FIRST, FIRST or FULL inside an unfinished record) or has
//     an unknown type is always corruption: an interrupted write can only
//     cut data short, never produce such a fragment.
//
// Slice lifetime: the record returned by Reader.Next is valid only until the
// next call to Next; callers copy what they keep. Writer.WriteRecord copies
// its argument.
package record

// BlockSize is the size of a log block. A fragment never crosses a block
// boundary.
const BlockSize = 32 << 10

// HeaderSize is the size of a fragment header: CRC (4), length (2), type (1).
const HeaderSize = 7

// FormatVersion is the version of the log format described in
// doc/format.md. It is not stored in log files; the files that refer to
// logs (the MANIFEST's version edits, the DB's options) carry versions of
// their own, and a future incompatible log format gets a new number here.
const FormatVersion = 1

// Fragment types. The values are part of the on-disk format.
const (
	// typeZero marks bytes that were never written, such as preallocated
	// space; a well-formed log never contains it inside a block.
	typeZero   = 0
	typeFull   = 1
	typeFirst  = 2
	typeMiddle = 3
	typeLast   = 4
)
