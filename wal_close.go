package lsmgo

import (
	"fmt"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/record"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// A close marker is what a clean Close leaves after the WALs: a new WAL
// file whose one record is an empty batch (count 0, which no write ever
// produces: Apply skips empty batches) carrying the sequence number after
// the last batch written to the WAL. It is written and fsynced after the
// last WAL was fsynced and closed, so it proves two things to the next
// Open (doc/durability.md, "Lost records"):
//
//   - The WALs before it are whole. Without it, the last WAL may end in a
//     torn write, which is what a crash leaves; after it, any early end
//     of theirs (a torn tail, damage, a file cut short, even at a record
//     boundary) lost acknowledged writes.
//   - How many: the marker's sequence number minus the one after the last
//     record replayed is the number of entries lost.
//
// It adds nothing to replay and holds no data, so an early end before it
// leaves no hole: Open recovers up to the early end and reports the loss
// at ERROR, instead of refusing the DB as it does when records follow.
// Versions before markers read it as the empty batch it is.

// markWALClosed writes the close marker for a DB whose WAL ended at
// walSeq. Failing to write it loses nothing but the proof, so a failure
// is only logged.
func (db *DB) markWALClosed(walSeq base.SeqNum) {
	name := db.path(base.MakeFilename(base.FileTypeLog, db.vs.NewFileNum()))
	if err := writeCloseMarker(db.fs, db.dirname, name, walSeq); err != nil {
		db.opts.Logger.Warn("lsmgo: cannot write the WAL close marker; the next Open cannot tell a cut WAL from a crash", "file", name, "err", err)
		// An empty or torn marker is harmless, but a file nobody needs.
		db.fs.Remove(name)
	}
}

// writeCloseMarker creates WAL file name holding the close marker for
// walSeq, fsyncs it and its directory dir.
func writeCloseMarker(fs vfs.FS, dir, name string, walSeq base.SeqNum) error {
	f, err := fs.Create(name)
	if err != nil {
		return err
	}
	marker := batchrepr.New()
	batchrepr.SetSeq(marker, walSeq)
	w := record.NewWriter(f)
	err = w.WriteRecord(marker)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return syncDir(fs, dir)
}

// isCloseMarker reports whether the WAL record rec, a valid batch, is a
// close marker.
func isCloseMarker(rec []byte) bool { return batchrepr.Count(rec) == 0 }

// isValidCloseMarker reports whether the WAL record rec is a valid batch
// and a close marker.
func isValidCloseMarker(rec []byte) bool {
	if len(rec) < batchrepr.HeaderLen || !isCloseMarker(rec) {
		return false // most records: not worth decoding twice
	}
	_, _, err := checkBatch(rec)
	return err == nil
}
