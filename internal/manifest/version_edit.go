package manifest

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// NumLevels is the number of LSM levels, L0 through L6.
const NumLevels = 7

// FileMetadata describes one table file. Once a FileMetadata is part of a
// Version its exported fields other than Compacting never change; many
// Versions share the same pointer. Build a fresh FileMetadata for each new
// file rather than copying one that has been in a Version: the copy would
// carry that file's reference count and never be reported obsolete.
type FileMetadata struct {
	FileNum base.FileNum
	// Size is the file's length in bytes.
	Size uint64
	// Smallest and Largest are the inclusive bounds of the file's internal
	// keys.
	Smallest, Largest base.InternalKey
	// SmallestSeq and LargestSeq bound the sequence numbers in the file.
	SmallestSeq, LargestSeq base.SeqNum
	// BlobRefs lists, by ascending blob file number, the bytes of the
	// records (header, key and value) the table's entries point to in
	// each blob file (value separation).
	BlobRefs []BlobRef
	// Compacting marks a file chosen as a compaction input. It is guarded
	// by the DB's mutex, not by this package, and never encoded.
	Compacting bool

	// refs counts the live Versions that contain this file; when it drops
	// to zero the file is obsolete.
	refs int32
}

// String formats the file for dumps.
func (f *FileMetadata) String() string {
	return fmt.Sprintf("%s:[%s-%s] size=%d seq=[%d,%d]",
		base.MakeFilename(base.FileTypeTable, f.FileNum), f.Smallest, f.Largest, f.Size, f.SmallestSeq, f.LargestSeq)
}

// BlobRef is what one table refers to in one blob file: the total length
// of the records its entries point to there (tables written before
// records were counted count values only).
type BlobRef struct {
	FileNum base.FileNum
	Bytes   uint64
}

// DeletedFile names a file an edit removes from a level.
type DeletedFile struct {
	Level   int
	FileNum base.FileNum
}

// NewFile is a file an edit adds to a level.
type NewFile struct {
	Level int
	Meta  *FileMetadata
}

// VersionEdit is the difference between two Versions, and the unit
// recorded in the MANIFEST. Zero scalar fields mean "unchanged".
type VersionEdit struct {
	// LogNum, when set, says WAL files with numbers below it are no longer
	// needed.
	LogNum base.FileNum
	// NextFileNum, when set, is above every file number allocated so far.
	NextFileNum base.FileNum
	// LastSeq, when set, is the largest sequence number in any table.
	LastSeq base.SeqNum
	// DeletedFiles are removed before NewFiles are added, so an edit can
	// move a file between levels by deleting and re-adding it.
	DeletedFiles []DeletedFile
	NewFiles     []NewFile
}

// editVersion is the first byte of every encoded edit. A reader rejects
// versions it does not know rather than misread fields.
const editVersion = 1

// Field tags of an encoded edit. The values are part of the on-disk format.
const (
	tagLogNum      = 1
	tagNextFileNum = 2
	tagLastSeq     = 3
	tagDeletedFile = 4
	tagNewFile     = 5
	// tagBlobRefs follows a tagNewFile field of a table that points into
	// blob files, and belongs to it.
	tagBlobRefs = 6
)

// Encode returns the edit's encoding (see doc/parts/manifest.md).
func (e *VersionEdit) Encode() []byte {
	b := []byte{editVersion}
	putScalar := func(tag, v uint64) {
		if v != 0 {
			b = binary.AppendUvarint(b, tag)
			b = binary.AppendUvarint(b, v)
		}
	}
	putScalar(tagLogNum, uint64(e.LogNum))
	putScalar(tagNextFileNum, uint64(e.NextFileNum))
	putScalar(tagLastSeq, uint64(e.LastSeq))
	for _, d := range e.DeletedFiles {
		b = binary.AppendUvarint(b, tagDeletedFile)
		b = binary.AppendUvarint(b, uint64(d.Level))
		b = binary.AppendUvarint(b, uint64(d.FileNum))
	}
	for _, n := range e.NewFiles {
		m := n.Meta
		b = binary.AppendUvarint(b, tagNewFile)
		b = binary.AppendUvarint(b, uint64(n.Level))
		b = binary.AppendUvarint(b, uint64(m.FileNum))
		b = binary.AppendUvarint(b, m.Size)
		b = binary.AppendUvarint(b, uint64(m.Smallest.Size()))
		b = m.Smallest.Append(b)
		b = binary.AppendUvarint(b, uint64(m.Largest.Size()))
		b = m.Largest.Append(b)
		b = binary.AppendUvarint(b, uint64(m.SmallestSeq))
		b = binary.AppendUvarint(b, uint64(m.LargestSeq))
		if len(m.BlobRefs) > 0 {
			b = binary.AppendUvarint(b, tagBlobRefs)
			b = binary.AppendUvarint(b, uint64(len(m.BlobRefs)))
			for _, r := range m.BlobRefs {
				b = binary.AppendUvarint(b, uint64(r.FileNum))
				b = binary.AppendUvarint(b, r.Bytes)
			}
		}
	}
	return b
}

// editDecoder walks an encoded edit, remembering the first error so the
// field loop stays linear.
type editDecoder struct {
	b   []byte
	off int
	err error
}

func (d *editDecoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.err = fmt.Errorf("bad varint for %s at byte %d", what, d.off)
		return 0
	}
	d.off += n
	return v
}

func (d *editDecoder) level() int {
	v := d.uvarint("level")
	if d.err == nil && v >= NumLevels {
		d.err = fmt.Errorf("level %d out of range at byte %d", v, d.off)
	}
	return int(v)
}

// key decodes a length-prefixed internal key into memory of its own, so the
// edit outlives the record buffer it was decoded from.
func (d *editDecoder) key(what string) base.InternalKey {
	n := d.uvarint(what + " length")
	if d.err != nil {
		return base.InternalKey{}
	}
	if n > uint64(len(d.b)-d.off) {
		d.err = fmt.Errorf("%s length %d runs past the end of the edit at byte %d", what, n, d.off)
		return base.InternalKey{}
	}
	k, ok := base.DecodeInternalKey(d.b[d.off : d.off+int(n)])
	if !ok {
		d.err = fmt.Errorf("malformed %s at byte %d", what, d.off)
		return base.InternalKey{}
	}
	d.off += int(n)
	return k.Clone()
}

// Decode replaces e with the edit encoded in b. Errors describe the problem
// without file or offset; the caller wraps them. The decoded edit shares no
// memory with b.
func (e *VersionEdit) Decode(b []byte) error {
	*e = VersionEdit{}
	if len(b) == 0 {
		return errors.New("empty version edit")
	}
	if b[0] != editVersion {
		return fmt.Errorf("unsupported version edit format %d", b[0])
	}
	d := &editDecoder{b: b, off: 1}
	var seen [tagBlobRefs + 1]bool
	for d.err == nil && d.off < len(b) {
		tagOff := d.off
		tag := d.uvarint("tag")
		if d.err != nil {
			break
		}
		switch tag {
		case tagLogNum, tagNextFileNum, tagLastSeq:
			if seen[tag] {
				return fmt.Errorf("field %d repeated at byte %d", tag, tagOff)
			}
			seen[tag] = true
			v := d.uvarint("scalar field")
			switch tag {
			case tagLogNum:
				e.LogNum = base.FileNum(v)
			case tagNextFileNum:
				e.NextFileNum = base.FileNum(v)
			case tagLastSeq:
				e.LastSeq = base.SeqNum(v)
			}
		case tagDeletedFile:
			level := d.level()
			num := base.FileNum(d.uvarint("deleted file number"))
			e.DeletedFiles = append(e.DeletedFiles, DeletedFile{Level: level, FileNum: num})
		case tagNewFile:
			level := d.level()
			m := &FileMetadata{FileNum: base.FileNum(d.uvarint("file number"))}
			m.Size = d.uvarint("file size")
			m.Smallest = d.key("smallest key")
			m.Largest = d.key("largest key")
			m.SmallestSeq = base.SeqNum(d.uvarint("smallest seq"))
			m.LargestSeq = base.SeqNum(d.uvarint("largest seq"))
			if d.err == nil {
				if err := m.validate(); err != nil {
					return fmt.Errorf("new file at byte %d: %w", tagOff, err)
				}
			}
			e.NewFiles = append(e.NewFiles, NewFile{Level: level, Meta: m})
		case tagBlobRefs:
			if len(e.NewFiles) == 0 || e.NewFiles[len(e.NewFiles)-1].Meta.BlobRefs != nil {
				return fmt.Errorf("blob references at byte %d follow no new file, or repeat", tagOff)
			}
			m := e.NewFiles[len(e.NewFiles)-1].Meta
			n := d.uvarint("blob reference count")
			if d.err == nil && (n == 0 || n > uint64(len(b)-d.off)/2) {
				return fmt.Errorf("blob reference count %d at byte %d is out of range", n, tagOff)
			}
			m.BlobRefs = make([]BlobRef, 0, n)
			for range n {
				r := BlobRef{FileNum: base.FileNum(d.uvarint("blob file number")), Bytes: d.uvarint("blob bytes")}
				if d.err == nil && (r.FileNum == 0 || len(m.BlobRefs) > 0 && r.FileNum <= m.BlobRefs[len(m.BlobRefs)-1].FileNum) {
					return fmt.Errorf("blob reference to file %d at byte %d: file numbers must be nonzero and ascending", r.FileNum, tagOff)
				}
				m.BlobRefs = append(m.BlobRefs, r)
			}
		default:
			return fmt.Errorf("unknown field tag %d at byte %d", tag, tagOff)
		}
	}
	return d.err
}

// validate checks the internal consistency of one file's metadata.
func (m *FileMetadata) validate() error {
	switch {
	case m.FileNum == 0:
		return errors.New("file number 0")
	case base.CompareInternal(m.Smallest, m.Largest) > 0:
		return fmt.Errorf("file %d: smallest key %s is above largest key %s", m.FileNum, m.Smallest, m.Largest)
	case m.SmallestSeq > m.LargestSeq:
		return fmt.Errorf("file %d: smallest seq %d is above largest seq %d", m.FileNum, m.SmallestSeq, m.LargestSeq)
	}
	return nil
}
