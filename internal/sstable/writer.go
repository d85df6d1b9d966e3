package sstable

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/bloom"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// DefaultBlockRestartInterval is the restart interval a zero
// WriterOptions.BlockRestartInterval means. The engine does not expose the
// knob, so the default lives here.
const DefaultBlockRestartInterval = 16

// WriterOptions configures a Writer. The engine's options layer owns the
// defaults of the knobs it exposes and passes them filled in.
type WriterOptions struct {
	// BlockSize is the uncompressed size at which a data block is cut. A
	// block holds at least one entry, so a size <= 0 cuts after every
	// entry.
	BlockSize int
	// BlockRestartInterval is the number of entries between restart
	// points; 0 means DefaultBlockRestartInterval.
	BlockRestartInterval int
	// BloomBitsPerKey sizes the table's bloom filter; 0 writes no filter.
	BloomBitsPerKey int
	// Compression is applied to data and index blocks.
	Compression Compression
}

// WriterMetadata describes a finished table.
type WriterMetadata struct {
	// Smallest and Largest are the first and last keys (zero for an empty
	// table). They are copies the caller owns.
	Smallest, Largest base.InternalKey
	// SmallestSeq and LargestSeq bound the entries' sequence numbers.
	SmallestSeq, LargestSeq base.SeqNum
	// Size is the file size in bytes.
	Size uint64
	// NumEntries counts the entries added.
	NumEntries uint64
}

// Writer writes one table. Entries are added in strictly increasing
// internal-key order; Close finishes the file. A Writer is not safe for
// concurrent use.
//
// Errors are sticky: after Add or a write fails, every later call returns
// the same error, Close still closes the file, and the caller removes it.
type Writer struct {
	f     vfs.File
	bw    *bufio.Writer
	opts  WriterOptions
	off   uint64
	err   error
	props Properties

	data          blockWriter
	index         blockWriter
	filter        *bloom.Builder
	pendingHandle blockHandle
	hasPending    bool // a data block was flushed; its index entry waits for the next key
	lastKey       []byte
	smallest      []byte
	keyBuf        []byte
	sepBuf        []byte
	compressBuf   []byte
	closed        bool
}

// errWriterClosed is returned by calls after Close.
var errWriterClosed = errors.New("sstable: writer is closed")

// NewWriter returns a writer that writes a table to f, buffering writes.
func NewWriter(f vfs.File, opts WriterOptions) *Writer {
	opts.BlockSize = min(opts.BlockSize, maxBlockSize)
	if opts.BlockRestartInterval <= 0 {
		opts.BlockRestartInterval = DefaultBlockRestartInterval
	}
	opts.BlockRestartInterval = min(opts.BlockRestartInterval, maxRestartInterval)
	opts.BloomBitsPerKey = max(opts.BloomBitsPerKey, 0)
	w := &Writer{
		f:     f,
		bw:    bufio.NewWriterSize(f, 256<<10),
		opts:  opts,
		data:  blockWriter{restartInterval: opts.BlockRestartInterval},
		index: blockWriter{restartInterval: 1},
	}
	if opts.BloomBitsPerKey > 0 {
		w.filter = bloom.NewBuilder(opts.BloomBitsPerKey)
	}
	if opts.Compression > ZstdCompression {
		w.err = fmt.Errorf("sstable: unknown compression %s", opts.Compression)
	}
	w.props.Compression = opts.Compression
	w.props.FilterBitsPerKey = uint64(opts.BloomBitsPerKey)
	return w
}

// Add appends an entry. key must sort strictly after the previous key by
// base.CompareInternal and have a valid kind; the writer copies key and
// value.
func (w *Writer) Add(key base.InternalKey, value []byte) error {
	if w.closed {
		return errWriterClosed
	}
	if w.err != nil {
		return w.err
	}
	if !key.Kind().Valid() {
		w.err = fmt.Errorf("sstable: adding %s: invalid kind", key)
		return w.err
	}
	if key.Size()+len(value) > MaxEntrySize {
		w.err = fmt.Errorf("sstable: adding %s: entry of %d bytes exceeds %d", key, key.Size()+len(value), MaxEntrySize)
		return w.err
	}
	w.keyBuf = key.Append(w.keyBuf[:0])
	if w.props.NumEntries > 0 && base.CompareEncoded(w.keyBuf, w.lastKey) <= 0 {
		last, _ := base.DecodeInternalKey(w.lastKey)
		w.err = fmt.Errorf("sstable: adding %s: not after previous key %s", key, last)
		return w.err
	}
	if !w.data.empty() && w.data.estimatedSize()+maxEntryLen(len(w.keyBuf), len(value)) > w.opts.BlockSize {
		w.flushDataBlock()
	}
	if w.hasPending {
		w.sepBuf = separator(w.sepBuf, w.lastKey, w.keyBuf)
		w.addIndexEntry(w.sepBuf)
	}

	w.data.add(w.keyBuf, value)
	if w.filter != nil {
		w.filter.AddKey(key.UserKey)
	}
	seq := key.Seq()
	if w.props.NumEntries == 0 {
		w.smallest = append(w.smallest[:0], w.keyBuf...)
		w.props.SmallestSeq, w.props.LargestSeq = seq, seq
	}
	w.props.SmallestSeq = min(w.props.SmallestSeq, seq)
	w.props.LargestSeq = max(w.props.LargestSeq, seq)
	w.props.NumEntries++
	if key.Kind() == base.KindDelete {
		w.props.NumDeletions++
	}
	w.props.RawKeySize += uint64(key.Size())
	w.props.RawValueSize += uint64(len(value))
	w.lastKey = append(w.lastKey[:0], w.keyBuf...)
	return w.err
}

// maxEntryLen bounds the bytes an entry adds to a block: its three varint
// headers, key and value as if nothing were shared, and a restart point.
// The writer cuts a block before an entry would take it past the block
// size, so that a decoded block of the default 4 KiB fits a 4 KiB heap
// allocation exactly; blocks cut after crossing the size took the next
// size class, 4864 bytes, and so 16% more memory than the cache charged.
func maxEntryLen(keyLen, valueLen int) int {
	return 3*binary.MaxVarintLen32 + keyLen + valueLen + 4
}

// addIndexEntry records the pending data block under sep.
func (w *Writer) addIndexEntry(sep []byte) {
	var v [2 * binary.MaxVarintLen64]byte
	w.index.add(sep, w.pendingHandle.append(v[:0]))
	w.hasPending = false
}

func (w *Writer) flushDataBlock() {
	if w.data.empty() {
		return
	}
	h, stored := w.writeBlock(w.data.finish(), w.opts.Compression)
	w.data.reset()
	w.pendingHandle, w.hasPending = h, true
	w.props.NumDataBlocks++
	w.props.DataSize += stored
}

// writeBlock writes a block and its trailer, compressing it when that pays,
// and returns its handle and the bytes it took with the trailer.
func (w *Writer) writeBlock(raw []byte, c Compression) (blockHandle, uint64) {
	if w.err != nil {
		return blockHandle{}, 0
	}
	payload, typ := raw, NoCompression
	if c != NoCompression {
		out, ok, err := compress(c, w.compressBuf, raw)
		if err != nil {
			w.err = fmt.Errorf("sstable: compressing block: %w", err)
			return blockHandle{}, 0
		}
		w.compressBuf = out[:0]
		if ok {
			payload, typ = out, c
		}
	}
	var trailer [blockTrailerLen]byte
	trailer[0] = byte(typ)
	binary.LittleEndian.PutUint32(trailer[1:], blockChecksum(payload, byte(typ)))
	h := blockHandle{offset: w.off, length: uint64(len(payload))}
	w.write(payload)
	w.write(trailer[:])
	return h, uint64(len(payload)) + blockTrailerLen
}

func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	if _, err := w.bw.Write(b); err != nil {
		w.err = fmt.Errorf("sstable: writing table: %w", err)
		return
	}
	w.off += uint64(len(b))
}

// EstimatedSize returns the approximate size the table would have if it
// were closed now. Compaction uses it to cut output tables.
func (w *Writer) EstimatedSize() uint64 {
	est := w.off + uint64(w.data.estimatedSize()) + uint64(w.index.estimatedSize()) + uint64(footerLen)
	if w.filter != nil {
		est += uint64(w.filter.NumKeys()*w.opts.BloomBitsPerKey/8) + 1
	}
	return est
}

// Close finishes the table: the last data block, the filter, properties,
// meta-index and index blocks and the footer; then it syncs and closes the
// file. The file is closed even when Close fails.
func (w *Writer) Close() (WriterMetadata, error) {
	if w.closed {
		return WriterMetadata{}, errWriterClosed
	}
	w.closed = true
	w.flushDataBlock()
	if w.hasPending {
		// The last block's separator only has to be >= its last key.
		w.addIndexEntry(w.lastKey)
	}

	meta := blockWriter{restartInterval: 1}
	var hbuf [2 * binary.MaxVarintLen64]byte
	if w.filter != nil {
		// Bloom bits are random; compressing them would only cost time.
		h, n := w.writeBlock(w.filter.Finish(), NoCompression)
		w.props.FilterSize = n
		meta.add([]byte(metaBlockedFilterName), h.append(hbuf[:0]))
	}
	indexBlock := w.index.finish()
	// The index size is known before it is written only uncompressed; the
	// property records the raw size, which is what memory use depends on.
	w.props.IndexSize = uint64(len(indexBlock))
	w.props.CreationTime = time.Now().Unix()
	h, _ := w.writeBlock(w.props.encode(), NoCompression)
	meta.add([]byte(metaPropertiesName), h.append(hbuf[:0]))
	metaHandle, _ := w.writeBlock(meta.finish(), NoCompression)
	indexHandle, _ := w.writeBlock(indexBlock, w.opts.Compression)
	w.write(footer{metaindex: metaHandle, index: indexHandle}.encode())

	if w.err == nil {
		if err := w.bw.Flush(); err != nil {
			w.err = fmt.Errorf("sstable: writing table: %w", err)
		}
	}
	if w.err == nil {
		if err := w.f.Sync(); err != nil {
			w.err = fmt.Errorf("sstable: syncing table: %w", err)
		}
	}
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = fmt.Errorf("sstable: closing table: %w", err)
	}
	if w.err != nil {
		return WriterMetadata{}, w.err
	}
	md := WriterMetadata{
		SmallestSeq: w.props.SmallestSeq,
		LargestSeq:  w.props.LargestSeq,
		Size:        w.off,
		NumEntries:  w.props.NumEntries,
	}
	if w.props.NumEntries > 0 {
		md.Smallest, _ = base.DecodeInternalKey(append([]byte(nil), w.smallest...))
		md.Largest, _ = base.DecodeInternalKey(append([]byte(nil), w.lastKey...))
	}
	return md, nil
}

// separator appends to dst an encoded internal key k with a <= k < b, for
// encoded internal keys a < b, preferring a short one: the index stores
// it for every block, and a short key makes the index smaller. When the
// user keys differ and a user key s with a.user < s < b.user is shorter
// than b.user, k is s with the largest trailer, which sorts before every
// real entry for s; otherwise k is a itself.
func separator(dst, a, b []byte) []byte {
	ua, ub := a[:len(a)-8], b[:len(b)-8]
	n := commonPrefix(ua, ub)
	if n < len(ua) && n < len(ub) {
		// ua[n] < ub[n]. Keep ua's first n+1 bytes, then bump the first
		// byte from n on that can grow without reaching ub: at n if the
		// bump stays below ub[n], else the first non-0xff byte after n
		// (the prefix then still sorts below ub at byte n).
		for i := n; i < len(ua); i++ {
			if ua[i] == 0xff || (i == n && ua[i]+1 >= ub[n]) {
				continue
			}
			dst = append(dst[:0], ua[:i+1]...)
			dst[i]++
			return binary.LittleEndian.AppendUint64(dst, base.MakeTrailer(base.SeqNumMax, base.KindMax))
		}
	}
	return append(dst[:0], a...)
}
