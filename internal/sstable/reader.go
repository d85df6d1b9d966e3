package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/bloom"
	"github.com/lsmgo-dev/lsmgo/internal/cache"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// Stats are counters a Reader adds to. Several readers (all tables of a
// DB) may share one Stats; a nil *Stats counts nothing.
type Stats struct {
	// BloomNegatives counts Gets answered by the filter alone.
	BloomNegatives atomic.Int64
	// BloomPositives counts Gets the filter let through; those that then
	// found nothing are the false positives.
	BloomPositives atomic.Int64
	// BlockReads counts blocks read from the file: data block cache
	// misses, plus the blocks NewReader and VerifyChecksums read.
	BlockReads atomic.Int64
}

// ReaderOptions configures a Reader.
type ReaderOptions struct {
	// Cache, if not nil, holds data blocks across reads. Every reader
	// sharing a cache must have a distinct FileNum.
	Cache *cache.Cache
	// FileNum identifies the table in the cache.
	FileNum base.FileNum
	// FileName names the file in errors.
	FileName string
	// Stats, if not nil, receives counts.
	Stats *Stats
}

// Reader reads a table. It is safe for concurrent use: Get and NewIter may
// be called from many goroutines. The index, filter and properties are
// read and verified by NewReader and held in memory; data blocks are read
// on demand through the cache.
type Reader struct {
	f        vfs.File
	opts     ReaderOptions
	footer   footer
	metaEnd  uint64 // offset of the footer: every block must end before it
	index    []byte
	filter   []byte
	filterH  blockHandle
	propsH   blockHandle
	props    Properties
	getIters sync.Pool
}

// NewReader opens the table in f, whose size is size. It reads and
// verifies the footer, meta-index, index, filter and properties. The
// Reader owns f from then on, even when NewReader fails: it closes f on
// failure, and Close closes it.
func NewReader(f vfs.File, size int64, opts ReaderOptions) (*Reader, error) {
	r := &Reader{f: f, opts: opts}
	if err := r.open(size); err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

func (r *Reader) open(size int64) error {
	if size < int64(footerLen) {
		return r.corrupt(0, "file of %d bytes is too short for a table footer", size)
	}
	r.metaEnd = uint64(size) - uint64(footerLen)
	buf := make([]byte, footerLen)
	if err := r.readAt(buf, int64(r.metaEnd)); err != nil {
		return err
	}
	ft, err := decodeFooter(buf, r.opts.FileName, int64(r.metaEnd))
	if err != nil {
		return err
	}
	r.footer = ft
	meta, err := r.readStructuredBlock(ft.metaindex, "meta-index")
	if err != nil {
		return err
	}
	if r.index, err = r.readStructuredBlock(ft.index, "index"); err != nil {
		return err
	}
	var it blockIter
	it.init(meta, r.opts.FileName, ft.metaindex.offset)
	var havePropsH bool
	for ok := it.first(); ok; ok = it.nextEntry() {
		h, ok := decodeBlockHandle(it.val)
		if !ok {
			return r.corrupt(ft.metaindex.offset, "bad handle for meta block %q", it.key)
		}
		switch string(it.key) {
		case metaFilterName:
			r.filterH = h
			if r.filter, err = r.readBlockHandle(h, "filter"); err != nil {
				return err
			}
		case metaPropertiesName:
			r.propsH, havePropsH = h, true
		}
	}
	if it.err != nil {
		return it.err
	}
	if !havePropsH {
		return r.corrupt(ft.metaindex.offset, "meta-index has no properties block")
	}
	pb, err := r.readStructuredBlock(r.propsH, "properties")
	if err != nil {
		return err
	}
	r.props, err = decodeProperties(pb, r.opts.FileName, r.propsH.offset)
	return err
}

func (r *Reader) corrupt(off uint64, format string, args ...any) error {
	return base.Corruptf(r.opts.FileName, int64(off), format, args...)
}

// readAt fills buf from off; a short file is corruption, not I/O failure.
func (r *Reader) readAt(buf []byte, off int64) error {
	n, err := r.f.ReadAt(buf, off)
	if n == len(buf) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return r.corrupt(uint64(off), "file truncated: read %d of %d bytes", n, len(buf))
	}
	return fmt.Errorf("sstable: reading %s at offset %d: %w", r.opts.FileName, off, err)
}

// readBlockHandle reads the block at h from the file, verifies its
// checksum and returns its decoded bytes. what names the block in errors.
func (r *Reader) readBlockHandle(h blockHandle, what string) ([]byte, error) {
	if !h.within(r.metaEnd) {
		return nil, r.corrupt(h.offset, "%s block handle (offset %d, length %d) points past the end of the table", what, h.offset, h.length)
	}
	buf := make([]byte, h.length+blockTrailerLen)
	if err := r.readAt(buf, int64(h.offset)); err != nil {
		return nil, err
	}
	if s := r.opts.Stats; s != nil {
		s.BlockReads.Add(1)
	}
	payload, typ := buf[:h.length:h.length], buf[h.length]
	if got, want := binary.LittleEndian.Uint32(buf[h.length+1:]), blockChecksum(payload, typ); got != want {
		return nil, r.corrupt(h.offset, "%s block checksum mismatch", what)
	}
	b, err := decompress(typ, payload)
	if err != nil {
		return nil, r.corrupt(h.offset, "%s block: bad compressed data: %v", what, err)
	}
	return b, nil
}

// readStructuredBlock reads a block in the entry/restart format and
// validates its restart array.
func (r *Reader) readStructuredBlock(h blockHandle, what string) ([]byte, error) {
	b, err := r.readBlockHandle(h, what)
	if err != nil {
		return nil, err
	}
	if reason := validateBlock(b); reason != "" {
		return nil, r.corrupt(h.offset, "%s block: %s", what, reason)
	}
	return b, nil
}

// readDataBlock returns the data block at h through the cache. Cached
// blocks were verified when they were read.
func (r *Reader) readDataBlock(h blockHandle) ([]byte, error) {
	if b, ok := r.opts.Cache.Get(r.opts.FileNum, h.offset); ok {
		return b, nil
	}
	b, err := r.readStructuredBlock(h, "data")
	if err != nil {
		return nil, err
	}
	r.opts.Cache.Set(r.opts.FileNum, h.offset, b)
	return b, nil
}

// Get returns the newest entry for userKey whose sequence number is below
// readSeq. The filter is consulted first. value is a fresh copy the caller
// owns; for KindDelete found is true and value nil.
func (r *Reader) Get(userKey []byte, readSeq base.SeqNum) (value []byte, kind base.Kind, found bool, err error) {
	if readSeq == 0 {
		return nil, 0, false, nil
	}
	if r.filter != nil {
		if !bloom.MayContain(r.filter, userKey) {
			if s := r.opts.Stats; s != nil {
				s.BloomNegatives.Add(1)
			}
			return nil, 0, false, nil
		}
		if s := r.opts.Stats; s != nil {
			s.BloomPositives.Add(1)
		}
	}
	it, _ := r.getIters.Get().(*tableIter)
	if it == nil {
		it = new(tableIter)
	}
	it.init(r, nil, nil)
	// The first entry at or after (userKey, readSeq-1 with the largest
	// kind byte) is the newest version visible at readSeq, if it has
	// userKey at all.
	seq := min(readSeq-1, base.SeqNumMax)
	it.seekBuf = binary.LittleEndian.AppendUint64(append(it.seekBuf[:0], userKey...), uint64(seq)<<8|0xff)
	if it.seekGEInternal(it.seekBuf) && bytes.Equal(it.ikey.UserKey, userKey) {
		kind, found = it.ikey.Kind(), true
		if kind != base.KindDelete {
			value = append([]byte{}, it.data.val...)
		}
	}
	err = it.err
	it.release()
	r.getIters.Put(it)
	return value, kind, found, err
}

// NewIter returns an iterator over the table's entries whose user keys lie
// in [lower, upper); a nil bound is unbounded. The iterator is not safe for
// concurrent use; the bounds must not change while it is open.
func (r *Reader) NewIter(lower, upper []byte) base.InternalIterator {
	it := new(tableIter)
	it.init(r, lower, upper)
	return it
}

// Properties returns the table's properties.
func (r *Reader) Properties() Properties { return r.props }

// VerifyChecksums rereads every block from the file, bypassing the cache,
// and checks checksums, compression and block structure; it also decodes
// every data entry and checks that keys increase and that each block's
// keys lie within its index entry. It returns the first problem found.
func (r *Reader) VerifyChecksums() error {
	buf := make([]byte, footerLen)
	if err := r.readAt(buf, int64(r.metaEnd)); err != nil {
		return err
	}
	if _, err := decodeFooter(buf, r.opts.FileName, int64(r.metaEnd)); err != nil {
		return err
	}
	for _, b := range []struct {
		h    blockHandle
		what string
	}{{r.footer.metaindex, "meta-index"}, {r.footer.index, "index"}, {r.propsH, "properties"}} {
		if _, err := r.readStructuredBlock(b.h, b.what); err != nil {
			return err
		}
	}
	if r.filter != nil {
		if _, err := r.readBlockHandle(r.filterH, "filter"); err != nil {
			return err
		}
	}

	var index, data blockIter
	index.init(r.index, r.opts.FileName, r.footer.index.offset)
	var prev []byte
	for ok := index.first(); ok; ok = index.nextEntry() {
		h, err := r.indexHandle(&index)
		if err != nil {
			return err
		}
		b, err := r.readStructuredBlock(h, "data")
		if err != nil {
			return err
		}
		data.init(b, r.opts.FileName, h.offset)
		for ok := data.first(); ok; ok = data.nextEntry() {
			if _, ok := base.DecodeInternalKey(data.key); !ok {
				return r.corrupt(h.offset, "bad internal key %q", data.key)
			}
			if prev != nil && base.CompareEncoded(prev, data.key) >= 0 {
				return r.corrupt(h.offset, "keys out of order")
			}
			if len(index.key) < 8 || base.CompareEncoded(data.key, index.key) > 0 {
				return r.corrupt(h.offset, "key beyond its index entry")
			}
			prev = append(prev[:0], data.key...)
		}
		if data.err != nil {
			return data.err
		}
		if data.numRestarts == 0 {
			return r.corrupt(h.offset, "empty data block")
		}
	}
	return index.err
}

// indexHandle decodes the data block handle at the index iterator's
// position.
func (r *Reader) indexHandle(index *blockIter) (blockHandle, error) {
	h, ok := decodeBlockHandle(index.val)
	if !ok {
		return blockHandle{}, r.corrupt(r.footer.index.offset, "bad data block handle in index")
	}
	return h, nil
}

// Close closes the file. Iterators must be closed first.
func (r *Reader) Close() error {
	return r.f.Close()
}
