package lsmgo

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// WAL retention (Options.WALRetainSize): a WAL whose memtable is flushed
// is renamed NNNNNN.rlog instead of being deleted, and the oldest
// retained files are deleted once they hold more than the size or are
// older than the age. The rename is the only change to the durability
// paths: recovery, Checkpoint, Check and Repair read .log files only, so
// a retained file is invisible to them, and one a crash left named .log
// below the manifest's log number is obsolete to Open as before, which
// retains it then. Nothing depends on a retained file: losing one (to a
// crash before the rename reached the disk, or to the bounds) only
// shortens what NewLogReader can serve.
//
// A retained file also keeps the blob files its pointers use. Those that
// only retained files keep (the tables no longer point into them) are
// disk the backlog takes as much as its WAL files, so they count in the
// size bound and in Metrics' RetainedBytes: each such blob file is
// charged to the newest retained file that keeps it, since it goes when
// that file goes (the oldest files go first).

// walRetention is the list of retained WAL files, oldest first.
type walRetention struct {
	mu    sync.Mutex
	size  int64
	age   time.Duration
	files []retainedWAL
	bytes int64 // of the WAL files
}

// retainedWAL is one retained file: its number, size, when it was
// retained (for a file found at Open, its modification time), and the
// blob files it keeps (blobFiles.retain) for its pointers.
type retainedWAL struct {
	num   base.FileNum
	size  int64
	at    time.Time
	blobs []base.FileNum
}

// SetWALRetention changes Options.WALRetainSize and WALRetainAge on an
// open DB; lowering them deletes the retained files past the new bounds
// at once.
func (db *DB) SetWALRetention(size int64, age time.Duration) {
	db.retain.mu.Lock()
	db.retain.size, db.retain.age = size, age
	db.retain.mu.Unlock()
	db.trimRetained()
}

// loadRetained lists the retained files found at Open (names is the
// directory listing), before recovery retains more and before any blob
// file is removed. Which blob files their pointers use is not recorded;
// every blob file older than the live WALs may be one, so the newest of
// them pins those (oldBlobs) until it leaves.
func (db *DB) loadRetained(names []string) {
	r := &db.retain
	r.size, r.age = db.opts.WALRetainSize, db.opts.WALRetainAge
	defer func() {
		if len(r.files) > 0 {
			r.files[len(r.files)-1].blobs = oldBlobs(names, db.vs.LogNum())
			db.blobs.retain(r.files[len(r.files)-1].blobs)
		}
	}()
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		if !ok || t != base.FileTypeRetainedLog {
			continue
		}
		st, err := db.fs.Stat(db.path(name))
		if err != nil {
			db.opts.Logger.Warn("lsmgo: cannot stat retained WAL", "file", name, "err", err)
			continue
		}
		at := st.ModTime()
		if at.IsZero() {
			at = time.Now()
		}
		r.files = append(r.files, retainedWAL{num: num, size: st.Size(), at: at})
		r.bytes += st.Size()
	}
	slices.SortFunc(r.files, func(a, b retainedWAL) int { return cmp.Compare(a.num, b.num) })
}

// oldBlobs returns, from the directory listing names, the blob files
// older than every live WAL: the only ones a WAL that is not live can
// point into, since a record's blob file is made before its record is
// written, and its WAL before the next one.
func oldBlobs(names []string, logNum base.FileNum) []base.FileNum {
	var blobs []base.FileNum
	live := base.FileNum(math.MaxUint64)
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		switch {
		case !ok:
		case t == base.FileTypeBlob:
			blobs = append(blobs, num)
		case t == base.FileTypeLog && num >= logNum:
			live = min(live, num)
		}
	}
	return slices.DeleteFunc(blobs, func(n base.FileNum) bool { return n > live })
}

// retireLog disposes of WAL file num once nothing needs it for recovery:
// it is retained if retention is on, else deleted. blobs are the blob
// files its pointers may use, which a retained file keeps.
func (db *DB) retireLog(num base.FileNum, blobs []base.FileNum) {
	r := &db.retain
	r.mu.Lock()
	keep := r.size > 0
	r.mu.Unlock()
	if !keep {
		db.removeFile(base.FileTypeLog, num)
		return
	}
	from := db.path(base.MakeFilename(base.FileTypeLog, num))
	to := db.path(base.MakeFilename(base.FileTypeRetainedLog, num))
	if err := db.fs.Rename(from, to); err != nil {
		db.opts.Logger.Warn("lsmgo: cannot retain WAL; deleting it", "file", from, "err", err)
		db.removeFile(base.FileTypeLog, num)
		return
	}
	var size int64
	if st, err := db.fs.Stat(to); err == nil {
		size = st.Size()
	}
	r.mu.Lock()
	// Open retires the WALs it replayed before older ones a crash left
	// behind: keep the list in file order.
	i, _ := slices.BinarySearchFunc(r.files, num, func(f retainedWAL, n base.FileNum) int { return cmp.Compare(f.num, n) })
	blobs = slices.Clone(blobs)
	db.blobs.retain(blobs)
	r.files = slices.Insert(r.files, i, retainedWAL{num: num, size: size, at: time.Now(), blobs: blobs})
	r.bytes += size
	r.mu.Unlock()
	db.trimRetained()
}

// trimRetained deletes the oldest retained files while they and the blob
// files only they keep hold more than the size bound, or while the oldest
// is older than the age bound.
func (db *DB) trimRetained() {
	r := &db.retain
	r.mu.Lock()
	var drop []retainedWAL
	now := time.Now()
	shares := r.blobShares(db.blobs.retainedOnly())
	total := r.bytes
	for _, n := range shares {
		total += n
	}
	for len(r.files) > 0 {
		f := r.files[0]
		if total <= r.size && (r.age <= 0 || now.Sub(f.at) < r.age) {
			break
		}
		drop = append(drop, f)
		total -= f.size + shares[0]
		shares = shares[1:]
		r.bytes -= f.size
		r.files = r.files[1:]
	}
	r.mu.Unlock()
	for _, f := range drop {
		db.removeFile(base.FileTypeRetainedLog, f.num)
		db.blobs.unretain(f.blobs)
	}
}

// blobShares returns, for each retained file, the bytes of the blob files
// in only (blobFiles.retainedOnly) of which it is the newest to keep one:
// the bytes that deleting it and the files before it frees. r.mu is held.
func (r *walRetention) blobShares(only map[base.FileNum]int64) []int64 {
	shares := make([]int64, len(r.files))
	if len(only) == 0 {
		return shares
	}
	newest := make(map[base.FileNum]int, len(only))
	for i, f := range r.files {
		for _, num := range f.blobs {
			if _, ok := only[num]; ok {
				newest[num] = i
			}
		}
	}
	for num, i := range newest {
		shares[i] += only[num]
	}
	return shares
}

// retainTrimInterval is how often the age bound is applied between
// flushes: on a DB that no longer flushes, old retained files and the
// blob files they pin must still go once they are too old.
var retainTrimInterval = time.Minute

// trimRetainedEvery applies the retention bounds every
// retainTrimInterval until stop is closed.
func (db *DB) trimRetainedEvery(stop <-chan struct{}) {
	defer db.bgWG.Done()
	t := time.NewTicker(retainTrimInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			db.trimRetained()
		}
	}
}

// retainedWALStats returns, for Metrics, how many retained files there
// are, their bytes with those of the blob files only they keep, and the
// latter alone.
func (db *DB) retainedWALStats() (files int, bytes, blobBytes int64) {
	r := &db.retain
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.blobShares(db.blobs.retainedOnly()) {
		blobBytes += n
	}
	return len(r.files), r.bytes + blobBytes, blobBytes
}
