// Package blob owns the blob file format: files that hold large values
// written once, append-only, outside the LSM tree, so that the tree (WAL,
// memtables, tables, compactions) carries only a small Pointer to each.
// doc/format.md ("Blob files") describes every byte; doc/blob.md describes
// how the engine uses them.
//
// A file is a 16-byte header (magic, format version, checksum) followed by
// records. A record is a fixed 24-byte header, the user key and the value.
// The header carries its own checksum and one each for the key and the
// value, so that:
//   - a Pointer (file number, value offset, value length and the value's
//     checksum) is verified with one positioned read of the value alone
//     (Reader.ReadValue), without the record around it;
//   - a sequential Scanner (for garbage collection and checking) trusts a
//     record's lengths once its header checksum passes, and so tells an
//     interrupted append (the record runs past the end of the file) from
//     damage (a header that fails its checksum with data after it).
//
// Invariants:
//   - Nothing read from a file is trusted before its checksum passes; no
//     length is used to allocate before it is checked against the file's
//     size. Damage is reported as a *base.CorruptionError naming the file
//     and the offset of the damaged record or value; nothing panics on file
//     contents or on a decoded Pointer.
//   - A Writer never rewrites a byte: records are only appended. After a
//     failed write the Writer refuses everything (the file's tail is
//     unknown), and the caller starts a new file.
//
// Slice lifetime: Scanner.Key is valid until the next call to Next;
// ReadValue returns a slice the caller owns. Writer.Add does not keep the
// key or value once it returns.
package blob
