// Package iter owns the iterator plumbing of the read path: the merging
// iterator that combines many sorted sources into one ordered stream, the
// level iterator that walks the non-overlapping tables of one level opening
// each lazily, and a slice iterator over in-memory entries.
//
// Every iterator here implements base.InternalIterator and keeps its
// invariants:
//   - entries come out in base.CompareInternal order going forward and in
//     exactly the reverse order going backward, and switching direction
//     lands on the adjacent entry;
//   - Key and Value return memory owned by a child (or the caller's slice);
//     it stays valid only until the next positioning call on the iterator
//     that returned it, because that call may move or close the child;
//   - the first error a child reports is sticky: the iterator becomes
//     invalid, every later positioning call returns false, Error returns it
//     and Close returns it too;
//   - Next and Prev on an iterator that is not positioned on an entry
//     (before any positioning call, or after running off either end) return
//     false; use First, Last or a seek to start again.
//
// None of these iterators is safe for concurrent use.
package iter
