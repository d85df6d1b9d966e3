package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
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
	// Map reads the blocks that NewReader does not keep (data blocks, and
	// every block VerifyChecksums and Salvage reread) through a read-only
	// shared mapping of the file instead of one ReadAt each, when the
	// file is an OS file (one with an Fd method) on a Unix system. A
	// mapped table's data blocks enter Cache only when read twice in a
	// row (see readDataBlock). A page the kernel cannot read is reported
	// as an error like a failed ReadAt (the fault is recovered), never as
	// data.
	// NewCompactionIter still reads ahead with ReadAt: through the
	// mapping, every page of a table being compacted away would count
	// in the process's resident set until the table is deleted.
	Map bool
}

// memMapper is a file whose bytes are in memory already; tests map
// their in-memory tables through it to exercise the mapped path.
type memMapper interface{ mappedBytes() []byte }

// Reader reads a table. It is safe for concurrent use: Get and NewIter may
// be called from many goroutines. The index, filter and properties are
// read and verified by NewReader and held in memory; data blocks are read
// on demand through the cache.
type Reader struct {
	f       vfs.File
	opts    ReaderOptions
	footer  footer
	metaEnd uint64 // offset of the footer: every block must end before it
	index   tableIndex
	filter  []byte
	legacy  bool // filter has the legacy layout
	filterH blockHandle
	propsH  blockHandle
	props   Properties
	// mapped is the whole file when ReaderOptions.Map could map it;
	// unmap releases it.
	mapped []byte
	unmap  func() error
	// lastMapped is one more than the offset of the data block a mapped
	// table decoded last, 0 before the first: a hint, read and written
	// without ordering, that says which block readDataBlock may find in
	// the cache.
	lastMapped atomic.Uint64
}

// NewReader opens the table in f, whose size is size. It reads and
// verifies the footer, meta-index, index, filter and properties. The
// Reader owns f from then on, even when NewReader fails: it closes f on
// failure, and Close closes it.
//
// The blocks NewReader keeps are read with ReadAt even when the table is
// to be mapped: it decodes them into memory of their own, so their pages
// in a mapping would only count in the process's resident set, for
// nothing, as long as the table is open (the index and filter are a few
// percent of a table).
func NewReader(f vfs.File, size int64, opts ReaderOptions) (*Reader, error) {
	r := &Reader{f: f, opts: opts}
	if err := r.open(size); err != nil {
		r.Close()
		return nil, err
	}
	if opts.Map {
		if m, isMem := f.(memMapper); isMem {
			r.mapped = m.mappedBytes()
		} else if m, unmap, ok := mapFile(f, size); ok {
			r.mapped, r.unmap = m, unmap
		}
		if r.mapped != nil && int64(len(r.mapped)) != size {
			r.Close()
			return nil, fmt.Errorf("sstable: mapping of %s has %d bytes, want %d", opts.FileName, len(r.mapped), size)
		}
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
	meta, err := r.readStructuredBlock(ft.metaindex, "meta-index", nil)
	if err != nil {
		return err
	}
	index, err := r.readStructuredBlock(ft.index, "index", nil)
	if err != nil {
		return err
	}
	if r.index, err = decodeIndex(index, r.opts.FileName, ft.index.offset); err != nil {
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
		case metaBlockedFilterName, metaLegacyFilterName:
			legacy := string(it.key) == metaLegacyFilterName
			if r.filter != nil && legacy {
				// Both layouts: the blocked one is cheaper to probe.
				continue
			}
			r.filterH, r.legacy = h, legacy
			if r.filter, err = r.readBlockHandle(h, "filter", nil); err != nil {
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
	pb, err := r.readStructuredBlock(r.propsH, "properties", nil)
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
// checksum and returns its decoded bytes, in a buffer of their own that no
// other block shares. what names the block in errors; alloc provides the
// buffer (nil: a plain allocation).
//
// A block costs one buffer, the decoded block itself, which the cache
// then keeps. A compressed block is read into a pooled buffer and
// decoded from there, and tables written without compression are read
// straight into the block's buffer (their rare compressed blocks still
// decode correctly, at the cost of one more buffer).
func (r *Reader) readBlockHandle(h blockHandle, what string, alloc *blockAlloc) ([]byte, error) {
	if !h.within(r.metaEnd) {
		return nil, r.corrupt(h.offset, "%s block handle (offset %d, length %d) points past the end of the table", what, h.offset, h.length)
	}
	if s := r.opts.Stats; s != nil {
		s.BlockReads.Add(1)
	}
	n := h.length + blockTrailerLen
	if r.mapped != nil {
		return r.readMapped(h, what, alloc)
	}
	if r.props.Compression == NoCompression || n > maxPooledReadLen {
		buf := alloc.get(int(n))
		if err := r.readAt(buf, int64(h.offset)); err != nil {
			return nil, err
		}
		return r.decodeStored(buf, h, what, true, alloc)
	}
	pooled := readBufPool.Get().(*[]byte)
	defer readBufPool.Put(pooled)
	if uint64(cap(*pooled)) < n {
		*pooled = make([]byte, n)
	}
	buf := (*pooled)[:n]
	if err := r.readAt(buf, int64(h.offset)); err != nil {
		return nil, err
	}
	return r.decodeStored(buf, h, what, false, alloc)
}

// readMapped decodes the block at h from the mapping; its bytes are
// copied or decompressed out of it, so no block aliases the mapping. A
// page the kernel cannot supply (an I/O error, a file cut short behind
// the DB's back) makes the access fault; SetPanicOnFault turns the fault
// into a panic this recovers as an error, where it would otherwise kill
// the process.
func (r *Reader) readMapped(h blockHandle, what string, alloc *blockAlloc) (b []byte, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if e := recover(); e != nil {
			fault, ok := e.(interface{ Addr() uintptr })
			if !ok {
				panic(e)
			}
			b, err = nil, fmt.Errorf("sstable: reading %s at offset %d: fault at address %#x in the file's mapping", r.opts.FileName, h.offset, fault.Addr())
		}
	}()
	n := h.length + blockTrailerLen
	return r.decodeStored(r.mapped[h.offset:h.offset+n:h.offset+n], h, what, false, alloc)
}

// decodeStored verifies a stored block (payload and trailer) read for h
// and returns its decoded bytes. An uncompressed block is returned in
// place when owned says the caller gives stored up, and copied into a
// buffer from alloc otherwise.
func (r *Reader) decodeStored(stored []byte, h blockHandle, what string, owned bool, alloc *blockAlloc) ([]byte, error) {
	payload, typ := stored[:h.length:h.length], stored[h.length]
	if got, want := binary.LittleEndian.Uint32(stored[h.length+1:]), blockChecksum(payload, typ); got != want {
		return nil, r.corrupt(h.offset, "%s block checksum mismatch", what)
	}
	if Compression(typ) == NoCompression {
		if !owned {
			payload = append(alloc.get(len(payload))[:0], payload...)
		}
		return payload, nil
	}
	b, err := decompress(typ, payload, alloc.get)
	if err != nil {
		return nil, r.corrupt(h.offset, "%s block: bad compressed data: %v", what, err)
	}
	return b, nil
}

// blockAlloc provides the buffer a block is decoded into. A nil
// *blockAlloc allocates plainly (blocks read once, at open, or to verify);
// otherwise each buffer is a recyclable cache.Block. A read may take two
// (a stored block read in place, then decoded elsewhere): the last one
// holds the decoded block, and release drops the others.
type blockAlloc struct {
	blk, prev *cache.Block
}

func (a *blockAlloc) get(n int) []byte {
	if a == nil {
		return make([]byte, n)
	}
	if a.prev != nil {
		a.prev.Release()
	}
	a.prev, a.blk = a.blk, cache.NewBlock(n)
	return a.blk.Data
}

// release drops the buffers that do not hold the block, and with
// keepBlock false the block's too.
func (a *blockAlloc) release(keepBlock bool) {
	if a.prev != nil {
		a.prev.Release()
	}
	if !keepBlock && a.blk != nil {
		a.blk.Release()
	}
	a.blk, a.prev = nil, nil
}

// maxPooledReadLen bounds the read buffers kept for reuse, so that one huge
// block does not pin its buffer in the pool.
const maxPooledReadLen = 256 << 10

// readBufPool holds buffers that stored blocks are read into before they
// are decompressed.
var readBufPool = sync.Pool{New: func() any { return new([]byte) }}

// readStructuredBlock reads a block in the entry/restart format and
// validates its restart array.
func (r *Reader) readStructuredBlock(h blockHandle, what string, alloc *blockAlloc) ([]byte, error) {
	b, err := r.readBlockHandle(h, what, alloc)
	if err != nil {
		return nil, err
	}
	return r.validated(b, h, what)
}

func (r *Reader) validated(b []byte, h blockHandle, what string) ([]byte, error) {
	if reason := validateBlock(b); reason != "" {
		return nil, r.corrupt(h.offset, "%s block: %s", what, reason)
	}
	return b, nil
}

// scanReadahead is how many bytes a compaction iterator reads from the
// file at once: 32 blocks of the default size per system call instead of
// one, and a buffer small enough to keep one per input table.
const scanReadahead = 128 << 10

// readahead holds the file bytes [off, off+len(buf)) that a compaction
// iterator read last.
type readahead struct {
	buf []byte
	off uint64
}

// readDataBlockAhead returns data block k decoded into a buffer of its
// own, outside the cache, serving it from ra's bytes or refilling ra from
// the block on. A block read this way is read once and dropped, so it
// costs no cached block its place.
func (r *Reader) readDataBlockAhead(ra *readahead, k int) ([]byte, error) {
	h := r.index.handles[k]
	if !h.within(r.metaEnd) {
		return nil, r.corrupt(h.offset, "data block handle (offset %d, length %d) points past the end of the table", h.offset, h.length)
	}
	if s := r.opts.Stats; s != nil {
		s.BlockReads.Add(1)
	}
	end := h.offset + h.length + blockTrailerLen
	if h.offset < ra.off || end > ra.off+uint64(len(ra.buf)) {
		n := max(end, min(h.offset+scanReadahead, r.metaEnd)) - h.offset
		if uint64(cap(ra.buf)) < n {
			ra.buf = make([]byte, n)
		}
		ra.buf, ra.off = ra.buf[:n], h.offset
		if err := r.readAt(ra.buf, int64(h.offset)); err != nil {
			ra.buf = ra.buf[:0]
			return nil, err
		}
	}
	// ra.buf is reused for the next bytes, so the block is copied or
	// decompressed out of it.
	b, err := r.decodeStored(ra.buf[h.offset-ra.off:end-ra.off], h, "data", false, nil)
	if err != nil {
		return nil, err
	}
	return r.validated(b, h, "data")
}

// readDataBlock returns the data block at h, with a reference the caller
// must Release. A pread table's blocks go through the cache (cached
// blocks were verified when they were read). A mapped table's blocks are
// decoded from the mapping, and only a block read twice in a row from
// the table enters the cache: the page cache already holds the table,
// and a decoded copy of every block read would hold most of its bytes a
// second time, on the Go heap, for a saving of one decode each. Uniform
// reads seldom read one block twice in a row; a hot block is read over
// and over (a big collection's metadata by every point read of an
// element: on a 10M-field hash, decoding it was about 40% of that
// metadata read's CPU), and a lookup in the cache then spares it the
// checksum and decompression.
func (r *Reader) readDataBlock(h blockHandle) (*cache.Block, error) {
	again := r.mapped == nil
	if !again {
		again = r.lastMapped.Load() == h.offset+1
		if !again {
			r.lastMapped.Store(h.offset + 1)
		}
	}
	if again {
		if b, ok := r.opts.Cache.Get(r.opts.FileNum, h.offset); ok {
			return b, nil
		}
	}
	var alloc blockAlloc
	data, err := r.readStructuredBlock(h, "data", &alloc)
	b := alloc.blk
	alloc.release(err == nil)
	if err != nil {
		return nil, err
	}
	b.Data = data
	if again {
		r.opts.Cache.Set(r.opts.FileNum, h.offset, b)
	}
	return b, nil
}

// Get returns the newest entry for userKey whose sequence number is below
// readSeq. The filter is consulted first. For KindDelete found is true and
// value nil. value is a copy the caller owns.
func (r *Reader) Get(userKey []byte, readSeq base.SeqNum) (value []byte, kind base.Kind, found bool, err error) {
	value, kind, found, blk, err := r.GetInBlock(userKey, readSeq)
	if blk != nil {
		if kind != base.KindDelete {
			value = bytes.Clone(value)
		}
		blk.Release()
	}
	return value, kind, found, err
}

// GetInBlock is Get without the copy: value aliases the data block blk,
// whose memory is recycled once released, so the caller reads the value
// and then calls blk.Release. blk is nil when no block was read (no
// entry, or an error).
//
// Only one data block can hold the answer: the first whose separator is
// >= the search key. When that block has no entry >= the search key, the
// separator is a shortened key between the block's last user key and the
// next block's first, so the next block starts with a different user key.
func (r *Reader) GetInBlock(userKey []byte, readSeq base.SeqNum) (value []byte, kind base.Kind, found bool, blk *cache.Block, err error) {
	if readSeq == 0 {
		return nil, 0, false, nil, nil
	}
	if r.filter != nil {
		if !r.mayContain(userKey) {
			if s := r.opts.Stats; s != nil {
				s.BloomNegatives.Add(1)
			}
			return nil, 0, false, nil, nil
		}
		if s := r.opts.Stats; s != nil {
			s.BloomPositives.Add(1)
		}
	}
	// The first entry at or after (userKey, readSeq-1 with the largest
	// kind byte) is the newest version visible at readSeq, if it has
	// userKey at all. Keys of common sizes are built on the stack.
	var targetBuf [64]byte
	seq := min(readSeq-1, base.SeqNumMax)
	target := binary.LittleEndian.AppendUint64(append(targetBuf[:0], userKey...), uint64(seq)<<8|0xff)
	k := r.index.seekGE(target)
	if k == r.index.len() {
		return nil, 0, false, nil, nil
	}
	h := r.index.handles[k]
	b, err := r.readDataBlock(h)
	if err != nil {
		return nil, 0, false, nil, err
	}
	it := getIterPool.Get().(*blockIter)
	it.init(b.Data, r.opts.FileName, h.offset)
	if it.seekGE(target) && bytes.Equal(it.key[:len(it.key)-8], userKey) {
		ik, ok := base.DecodeInternalKey(it.key)
		if !ok {
			err = r.corrupt(h.offset, "bad internal key %q", it.key)
		} else {
			kind, found = ik.Kind(), true
			if kind != base.KindDelete {
				value = it.val
			}
		}
	}
	if err == nil {
		err = it.err
	}
	it.reset()
	getIterPool.Put(it)
	if err != nil || !found {
		b.Release()
		return nil, 0, false, nil, err
	}
	return value, kind, true, b, nil
}

func (r *Reader) mayContain(userKey []byte) bool {
	if r.legacy {
		return bloom.MayContainLegacy(r.filter, userKey)
	}
	return bloom.MayContain(r.filter, userKey)
}

// getIterPool recycles the block iterators of Get, and with them the key
// buffers they have grown.
var getIterPool = sync.Pool{New: func() any { return new(blockIter) }}

// NewIter returns an iterator over the table's entries whose user keys lie
// in [lower, upper); a nil bound is unbounded. The iterator is not safe for
// concurrent use; the bounds must not change while it is open.
func (r *Reader) NewIter(lower, upper []byte) base.InternalIterator {
	it := new(tableIter)
	it.data.key, it.data.alt, it.seekBuf = it.bufs[0][:0], it.bufs[1][:0], it.bufs[2][:0]
	it.init(r, lower, upper)
	return it
}

// NewCompactionIter returns an iterator over all the table's entries for
// a reader that visits each block once, forward, as a compaction does.
// It neither looks in nor fills the block cache: a compaction's input
// blocks would evict the ones point reads keep coming back to, and they
// belong to a table about to be deleted. It reads scanReadahead bytes per
// system call instead of one block. Reverse moves work but reread the
// file for every block.
func (r *Reader) NewCompactionIter() base.InternalIterator {
	it := r.NewIter(nil, nil).(*tableIter)
	it.ra = new(readahead)
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
	}{{r.footer.metaindex, "meta-index"}, {r.propsH, "properties"}} {
		if _, err := r.readStructuredBlock(b.h, b.what, nil); err != nil {
			return err
		}
	}
	indexBlock, err := r.readStructuredBlock(r.footer.index, "index", nil)
	if err != nil {
		return err
	}
	if r.filter != nil {
		if _, err := r.readBlockHandle(r.filterH, "filter", nil); err != nil {
			return err
		}
	}

	var index, data blockIter
	index.init(indexBlock, r.opts.FileName, r.footer.index.offset)
	var prev []byte
	for ok := index.first(); ok; ok = index.nextEntry() {
		h, err := r.indexHandle(&index)
		if err != nil {
			return err
		}
		b, err := r.readStructuredBlock(h, "data", nil)
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

// Mapped reports whether the reader reads its blocks through a mapping
// of the file (ReaderOptions.Map, on a file that could be mapped).
func (r *Reader) Mapped() bool { return r.mapped != nil }

// Close closes the file. Iterators must be closed first, and no Get may
// be running.
func (r *Reader) Close() error {
	var err error
	if r.unmap != nil {
		err = r.unmap()
		r.mapped, r.unmap = nil, nil
	}
	return errors.Join(err, r.f.Close())
}

// Salvage reads each data block on its own, bypassing the cache, and calls
// fn with the entries of every block that reads intact, in key order. A
// damaged block is skipped whole: its checksum no longer vouches for any
// of its bytes. It returns how many blocks it skipped and the error of the
// first; err is fn's error, which stops it. The index comes from
// NewReader, so a table whose footer or index is damaged cannot be
// salvaged this way (NewReader fails). key and value are valid only
// during the call.
func (r *Reader) Salvage(fn func(key base.InternalKey, value []byte) error) (skipped int, first, err error) {
	var data blockIter
	var prev, last []byte
	for k := range r.index.len() {
		h := r.index.handles[k]
		b, berr := r.readStructuredBlock(h, "data", nil)
		if berr == nil {
			data.init(b, r.opts.FileName, h.offset)
			// A block is taken only if all of it decodes, in order and
			// after every key taken so far.
			last = append(last[:0], prev...)
			for ok := data.first(); ok; ok = data.nextEntry() {
				if _, ok := base.DecodeInternalKey(data.key); !ok || (len(last) > 0 && base.CompareEncoded(last, data.key) >= 0) {
					berr = r.corrupt(h.offset, "bad or out-of-order key in a data block")
					break
				}
				last = append(last[:0], data.key...)
			}
			if berr == nil {
				berr = data.err
			}
		}
		if berr != nil {
			if skipped == 0 {
				first = berr
			}
			skipped++
			continue
		}
		for ok := data.first(); ok; ok = data.nextEntry() {
			ik, _ := base.DecodeInternalKey(data.key)
			if err := fn(ik, data.val); err != nil {
				return skipped, first, err
			}
			prev = append(prev[:0], data.key...)
		}
	}
	return skipped, first, nil
}
