package lsmgo

// A CompactionFilter lets the application drop entries it knows to be
// dead while flushes and compactions rewrite them, so that data made
// unreachable by a small write (the server deletes a collection of
// millions of elements by deleting its metadata entry) is reclaimed
// without a write per dead entry.
//
// Options.NewCompactionFilter makes one filter per flush or compaction,
// handing it a Reader of the DB's state when that work began. The work
// asks Drop about the newest version of each key it rewrites, when that
// version holds a value (deletions are not offered) and no open Snapshot
// can see it. Drop returning true turns that version into a deletion with
// the same sequence number, exactly as if Delete had been written right
// after it: readers no longer find the key (older versions included) and
// the entry's space, and its blob value's, is reclaimed once the deletion
// reaches the bottom level. Until the rewrite happens, or if it never
// does, the key reads as before: a filter reclaims space, it does not
// delete on time.
//
// The decision may depend on the state Reader and on nothing that can
// change back: Drop(key) returning true must mean that key is dead in
// that state and in every later state of the DB, since the deletion
// applies to every reader that is not an older Snapshot (newer
// Snapshots, Views and iterators included). Views and iterators opened
// before the rewrite keep reading the tables they pinned, and Snapshots
// older than the state never see a dropped version, so neither can
// observe a filter's decision. A key written again after the state,
// with a newer version, is not affected: only the version offered
// becomes a deletion.
//
// A filter is used by one goroutine, but filters of concurrent flushes
// and compactions run at once. Drop must not keep key after returning,
// must not write to the DB (a flush may be waiting for it), and should be
// cheap: it is asked once per rewritten key. Reads through state are
// fine; an error there should mean "keep". It is never asked during Open.
// The state pins the memtables and tables of its moment until the flush
// or compaction ends, so a memtable flushed meanwhile keeps its memory
// that long (doc/compaction.md, "Compaction filter").
type CompactionFilter interface {
	// Drop reports whether the version of key on offer is dead.
	Drop(key []byte) bool
}

// CompactionFilterFunc adapts a function to CompactionFilter.
type CompactionFilterFunc func(key []byte) bool

// Drop calls f(key).
func (f CompactionFilterFunc) Drop(key []byte) bool { return f(key) }

// compactionFilter starts the filter of one flush or compaction. It
// returns nil, and a no-op release, when the DB has none or is closing.
// The caller calls it before reading the snapshot list: a Snapshot
// missing from that list is taken later, so it reads a state at least as
// new as the filter's, in which what the filter drops is dead too.
// release closes the filter's state once the output is written.
func (db *DB) compactionFilter() (drop func([]byte) bool, release func()) {
	if db.opts.NewCompactionFilter == nil {
		return nil, func() {}
	}
	state, err := db.NewView()
	if err != nil {
		return nil, func() {}
	}
	f := db.opts.NewCompactionFilter(state)
	if f == nil {
		state.Close()
		return nil, func() {}
	}
	return f.Drop, func() { state.Close() }
}
