package lsmgo

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/record"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// ErrNotRetained is NewLogReader's and LogReader.Next's refusal: the WAL
// files the DB holds do not have the batches from that sequence number
// on, whole and in order (never written, deleted by the retention
// bounds, damaged, or the history was cut by a crash's recovery). The
// error wraps it with the reason.
var ErrNotRetained = errors.New("lsmgo: sequence number not in the retained WAL")

// LogReader reads committed batches back from the WAL files: those kept
// after their flush (Options.WALRetainSize) and the live ones, in commit
// order, each in the replicated encoding that Options.OnCommit reports
// and ApplyReplicated takes. It checks that every batch starts where the
// one before ended, so what it returns is a run of the DB's history
// without a gap or a duplicate; it never returns a batch it cannot prove
// so (ErrNotRetained).
//
// A WAL file's records are read up to its end or to the first record
// that does not read (a torn write, damage, a value missing from a blob
// file); the next file must then start exactly where the reading
// stopped. That is what recovery leaves after a crash: it keeps the
// records before the damage, and the writes after Open take the
// sequence numbers of the ones it dropped, in a newer WAL. Any other
// stop (a retained file damaged later, a blob file deleted since) leaves
// a gap, which ends the reading.
//
// A LogReader is not safe for concurrent use; Close releases its file.
type LogReader struct {
	db   *DB
	next uint64 // the sequence number the next batch must start at
	num  base.FileNum
	f    vfs.File
	name string
	r    *record.Reader
	// first is the WAL record of the batch at the reader's start, which
	// NewLogReader read.
	first []byte
	// reopen is set when the reader met the end of the newest file: the
	// next call reads that file again from its start (skipping what it
	// returned), since the commit pipeline may have added records since.
	// reread is set once the reader has read the current file again
	// after a newer one appeared, which is when the commit pipeline has
	// finished it.
	reopen, reread bool
	out, vbuf      []byte
}

// NewLogReader returns a reader of the committed batches from sequence
// number from on. from must be where a batch the WAL files hold starts,
// or just after the last one written; otherwise the error wraps
// ErrNotRetained.
func (db *DB) NewLogReader(from uint64) (*LogReader, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	db.trimRetained()
	nums, err := db.logFiles()
	if err != nil {
		return nil, err
	}
	// The last file whose first batch starts at or before from holds it.
	start := -1
	for i, num := range nums {
		seq, ok := db.firstLogSeq(num)
		if !ok {
			continue
		}
		if seq > from {
			break
		}
		start = i
	}
	if start < 0 {
		return nil, fmt.Errorf("%w: %d is before the oldest batch held", ErrNotRetained, from)
	}
	lr := &LogReader{db: db, next: from}
	if err := lr.open(nums[start]); err != nil {
		return nil, err
	}
	for {
		rec, err := lr.r.Next()
		if err != nil {
			break
		}
		seq, count, err := checkBatch(rec)
		if err != nil {
			break
		}
		if count == 0 {
			continue // a close marker
		}
		switch end := uint64(seq) + uint64(count); {
		case uint64(seq) == from:
			lr.first = append([]byte(nil), rec...)
			return lr, nil
		case end == from:
			return lr, nil
		case end > from:
			lr.Close()
			return nil, fmt.Errorf("%w: %d is not where a batch starts", ErrNotRetained, from)
		}
	}
	// The file ends, or stops, before from: only its successor can start
	// there, and it does not, or it would have been chosen.
	lr.Close()
	return nil, fmt.Errorf("%w: %d is past the batches held", ErrNotRetained, from)
}

// Pos returns the sequence number the next batch starts at.
func (lr *LogReader) Pos() uint64 { return lr.next }

// Next returns the next committed batch, valid until the next call, or
// io.EOF when the WAL holds no more yet (call again later), or an error
// wrapping ErrNotRetained when the batches from Pos on cannot be read
// whole and in order, or another error (I/O, ErrClosed).
func (lr *LogReader) Next() ([]byte, error) {
	if lr.db.closed.Load() {
		return nil, ErrClosed
	}
	if lr.f == nil {
		return nil, fmt.Errorf("%w: reader closed", ErrNotRetained)
	}
	if rec := lr.first; rec != nil {
		lr.first = nil
		data, _, err := lr.take(rec)
		return data, err
	}
	if lr.reopen {
		if err := lr.open(lr.num); err != nil {
			return nil, err
		}
	}
	for {
		rec, err := lr.r.Next()
		if err == nil {
			data, done, err := lr.take(rec)
			if err != nil {
				return nil, err
			}
			if done {
				return data, nil
			}
			continue
		}
		// The file ends or stops here: go on with the next one, if
		// there is one, or wait for more of this one.
		next, ok, lerr := lr.db.nextLogFile(lr.num)
		if lerr != nil {
			return nil, lerr
		}
		if !ok {
			lr.reopen = true
			return nil, io.EOF
		}
		if !lr.reread {
			// The pipeline finished this file before it created the
			// next: read it once more, to its real end. Not only
			// after io.EOF: a record read while the writer was still
			// filling the file's preallocated zeros can look damaged
			// with an intact one after it.
			if err := lr.open(lr.num); err != nil {
				return nil, err
			}
			lr.reread = true
			continue
		}
		if err := lr.open(next); err != nil {
			return nil, err
		}
	}
}

// take checks the WAL record rec: a batch before Pos is skipped (a file
// read again), one at Pos is returned (done) in the replicated encoding,
// one past Pos is a gap.
func (lr *LogReader) take(rec []byte) (data []byte, done bool, err error) {
	seq, count, err := checkBatch(rec)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %s, record at offset %d: %v", ErrNotRetained, lr.name, lr.r.Offset(), err)
	}
	switch {
	case count == 0: // a close marker
		return nil, false, nil
	case uint64(seq)+uint64(count) <= lr.next:
		return nil, false, nil
	case uint64(seq) != lr.next:
		return nil, false, fmt.Errorf("%w: %s holds a batch at %d where %d was next", ErrNotRetained, lr.name, seq, lr.next)
	}
	data, err = lr.replicated(rec)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %s, record at offset %d: %v", ErrNotRetained, lr.name, lr.r.Offset(), err)
	}
	lr.next = uint64(seq) + uint64(count)
	return data, true, nil
}

// replicated returns the WAL record rec in the replicated encoding: the
// values its pointers refer to read back from the blob files, inline.
func (lr *LogReader) replicated(rec []byte) ([]byte, error) {
	br, err := batchrepr.NewReader(rec)
	if err != nil {
		return nil, err
	}
	// The header with a count of 0, which Append counts up.
	out := append(lr.out[:0], rec[:batchrepr.HeaderLen-4]...)
	out = append(out, 0, 0, 0, 0)
	for {
		kind, key, value, ok, err := br.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		switch kind {
		case base.KindSet, base.KindDelete, base.KindSetExpiry:
		case base.KindSetBlob, base.KindSetExpiryBlob:
			p, err := entryPointer(kind, value)
			if err != nil {
				return nil, err
			}
			v := lr.vbuf[:0]
			if kind == base.KindSetExpiryBlob {
				v = append(v, value[:base.ExpiryLen]...)
			}
			if v, err = lr.db.blobs.readPointer(p, v); err != nil {
				return nil, fmt.Errorf("key %s: %w", quoteKey(key), err)
			}
			lr.vbuf = v
			if kind == base.KindSetBlob {
				kind, value = base.KindSet, v
			} else {
				kind, value = base.KindSetExpiry, v
			}
		default:
			return nil, fmt.Errorf("record kind %d", kind)
		}
		out = batchrepr.Append(out, kind, key, value)
	}
	lr.out = out
	return out, nil
}

// Close releases the reader's file.
func (lr *LogReader) Close() error {
	if lr.f == nil {
		return nil
	}
	err := lr.f.Close()
	lr.f, lr.r = nil, nil
	return err
}

// open starts reading file num from its beginning.
func (lr *LogReader) open(num base.FileNum) error {
	f, name, err := lr.db.openLog(num)
	if err != nil {
		return err
	}
	lr.Close()
	if num != lr.num {
		lr.reread = false
	}
	lr.f, lr.name, lr.num = f, name, num
	lr.r = record.NewReader(f, name)
	lr.reopen = false
	return nil
}

// logFiles returns the numbers of the WAL files, live and retained,
// oldest first.
func (db *DB) logFiles() ([]base.FileNum, error) {
	names, err := db.fs.List(db.dirname)
	if err != nil {
		return nil, err
	}
	var nums []base.FileNum
	for _, name := range names {
		if t, num, ok := base.ParseFilename(name); ok && (t == base.FileTypeLog || t == base.FileTypeRetainedLog) {
			nums = append(nums, num)
		}
	}
	slices.Sort(nums)
	return slices.Compact(nums), nil
}

// nextLogFile returns the oldest WAL file newer than num.
func (db *DB) nextLogFile(num base.FileNum) (base.FileNum, bool, error) {
	nums, err := db.logFiles()
	if err != nil {
		return 0, false, err
	}
	i, found := slices.BinarySearch(nums, num)
	if found {
		i++
	}
	if i == len(nums) {
		return 0, false, nil
	}
	return nums[i], true, nil
}

// openLog opens WAL file num, live or retained: a live one may be
// retained (renamed) at any time, never the other way.
func (db *DB) openLog(num base.FileNum) (vfs.File, string, error) {
	name := db.path(base.MakeFilename(base.FileTypeLog, num))
	f, err := db.fs.Open(name)
	if err == nil {
		return f, name, nil
	}
	name = db.path(base.MakeFilename(base.FileTypeRetainedLog, num))
	if f, err = db.fs.Open(name); err != nil {
		return nil, "", fmt.Errorf("%w: WAL %06d: %v", ErrNotRetained, num, err)
	}
	return f, name, nil
}

// firstLogSeq returns the sequence number of the first batch of WAL file
// num; ok is false when it holds none that reads.
func (db *DB) firstLogSeq(num base.FileNum) (uint64, bool) {
	f, name, err := db.openLog(num)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	r := record.NewReader(f, name)
	for {
		rec, err := r.Next()
		if err != nil {
			return 0, false
		}
		seq, count, err := checkBatch(rec)
		if err != nil {
			return 0, false
		}
		if count > 0 {
			return uint64(seq), true
		}
	}
}
