// Package manifest owns the record of which table files make up the LSM
// tree: version edits and their encoding, immutable Versions, and the
// VersionSet that logs edits to the MANIFEST and switches CURRENT.
// doc/parts/manifest.md describes the bytes.
//
// Invariants:
//   - A Version is installed only after the edit that produced it is
//     synced to the manifest; CURRENT always names a manifest whose first
//     record, a full snapshot, is durable.
//   - In every Version, L0 is ordered newest first and L1 and deeper are
//     sorted by smallest key with disjoint user-key ranges; LogAndApply
//     rejects an edit that would break this before writing anything.
//   - A table file is reported obsolete exactly once, when the last live
//     Version containing it is released; the VersionSet's own reference on
//     the current Version keeps current files from ever being reported.
//   - File numbers from NewFileNum are unique and above every number the
//     manifest mentions.
//
// Concurrency: LogAndApply calls are serialized; Current, Unref, LiveFiles,
// NewFileNum and the accessors may run concurrently with it and with each
// other. FileMetadata.Compacting is the one mutable field and belongs to
// the DB's mutex.
package manifest
