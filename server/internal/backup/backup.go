// Package backup keeps backups of lsmgo DBs in a backup set: a directory
// or an S3 prefix (a Store) that holds each file of every backup once,
// under the SHA-256 of its content, and one manifest per backup listing
// its files with their sizes and SHA-256 sums (doc/operations.md,
// "Backups").
//
// Layout of a backup set:
//
//	data/<sha256 hex>      the bytes of a DB file (table, blob file, MANIFEST, ...)
//	backups/<id>.json      a backup's manifest: its files' names, sizes, sums
//
// Invariants:
//   - A backup exists once its manifest does, and its manifest is written
//     only after every file it lists has been stored and read back with
//     the right sum: an interrupted backup leaves only data objects, which
//     the next backup reuses.
//   - Objects are named by their content, so a file is uploaded once
//     however many backups hold it (tables never change once written, so
//     an incremental backup uploads only the tables made since the last),
//     and two DBs, or one DB before and after a restore, can share a set
//     without one file overwriting another of the same name.
//   - Restore checks every byte against the manifest before the restored
//     directory gets its name, and names the damaged file when one does
//     not match.
package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/vfs"
)

// Store is where a backup set lives. Keys are slash-separated paths.
// Implementations are safe for concurrent use.
type Store interface {
	// Put stores size bytes read from r as the object key, replacing
	// any; once it returns nil the object is durable and complete.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get opens the object key; a missing object gives an error
	// matching fs.ErrNotExist.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Size returns the size of the object key, or an error matching
	// fs.ErrNotExist when there is none.
	Size(ctx context.Context, key string) (int64, error)
	// List returns the keys that start with prefix, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
	// Delete removes the object key; a missing one is not an error.
	Delete(ctx context.Context, key string) error
}

const (
	dataPrefix     = "data/"
	backupsPrefix  = "backups/"
	manifestSuffix = ".json"
	// manifestFormat is the version of the manifest's JSON layout.
	manifestFormat = 1
	// idLayout names a backup by its UTC creation time, so that IDs sort
	// by age and the newest is the last.
	idLayout = "20060102T150405.000Z"
)

// File is one file of a backup.
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Manifest describes one backup.
type Manifest struct {
	Format  int       `json:"format"`
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	Files   []File    `json:"files"`
	// Digest is the SHA-256 of Files' JSON encoding, so damage to a
	// name or a sum in the manifest is caught as surely as damage to a
	// file.
	Digest string `json:"digest"`
}

// Stats counts what a backup stored: Uploaded files (and bytes) were new
// to the set; Reused ones were already there, from an earlier backup.
type Stats struct {
	Files                      int
	Uploaded, Reused           int
	UploadedBytes, ReusedBytes int64
}

// String summarizes the stats in one line.
func (s Stats) String() string {
	return fmt.Sprintf("%d files: %d uploaded (%d bytes), %d already in the backup set (%d bytes)",
		s.Files, s.Uploaded, s.UploadedBytes, s.Reused, s.ReusedBytes)
}

// CorruptError reports a backup whose bytes do not match its manifest.
type CorruptError struct {
	ID, File, Reason string
}

func (e *CorruptError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("backup %s is damaged: %s", e.ID, e.Reason)
	}
	return fmt.Sprintf("backup %s is damaged: file %s: %s", e.ID, e.File, e.Reason)
}

func digest(files []File) string {
	b, _ := json.Marshal(files) // a []File always encodes
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// DB checkpoints db into scratch (a directory that must not exist, on the
// DB's filesystem so that the checkpoint can hard-link its files), stores
// the checkpoint in st as a new backup and removes scratch.
func DB(ctx context.Context, db *lsmgo.DB, scratch string, st Store) (*Manifest, Stats, error) {
	// A directory left by an interrupted run is ours by its name.
	if err := os.RemoveAll(scratch); err != nil {
		return nil, Stats{}, err
	}
	if err := db.Checkpoint(scratch); err != nil {
		return nil, Stats{}, err
	}
	defer os.RemoveAll(scratch)
	return Upload(ctx, st, scratch, time.Now())
}

// Upload stores the files of dir (a checkpoint, or a DB directory no
// process has open) in st as a new backup created at now: each file not
// already in the set is put and read back to compare its SHA-256, and the
// manifest is put last.
func Upload(ctx context.Context, st Store, dir string, now time.Time) (*Manifest, Stats, error) {
	var stats Stats
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, stats, err
	}
	m := &Manifest{Format: manifestFormat}
	for _, e := range entries {
		if e.Name() == "LOCK" {
			continue // a lock file holds nothing, and restore needs none
		}
		if !e.Type().IsRegular() {
			return nil, stats, fmt.Errorf("backup: %s: not a regular file; a DB directory holds only files", filepath.Join(dir, e.Name()))
		}
		f, reused, err := uploadFile(ctx, st, filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, stats, err
		}
		m.Files = append(m.Files, f)
		stats.Files++
		if reused {
			stats.Reused++
			stats.ReusedBytes += f.Size
		} else {
			stats.Uploaded++
			stats.UploadedBytes += f.Size
		}
	}
	m.Digest = digest(m.Files)
	if err := putManifest(ctx, st, m, now); err != nil {
		return nil, stats, err
	}
	return m, stats, nil
}

// uploadFile puts one file under the SHA-256 of its content unless the set
// holds an object of that name and size already.
func uploadFile(ctx context.Context, st Store, path string) (File, bool, error) {
	f := File{Name: filepath.Base(path)}
	sum, size, err := hashFile(path)
	if err != nil {
		return f, false, err
	}
	f.Size, f.SHA256 = size, sum
	key := dataPrefix + sum
	if have, err := st.Size(ctx, key); err == nil && have == size {
		return f, true, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return f, false, err
	}
	r, err := os.Open(path)
	if err != nil {
		return f, false, err
	}
	defer r.Close()
	if err := st.Put(ctx, key, r, size); err != nil {
		return f, false, fmt.Errorf("backup: storing %s: %w", f.Name, err)
	}
	got, gotSize, err := hashObject(ctx, st, key)
	if err != nil {
		return f, false, fmt.Errorf("backup: reading back %s: %w", f.Name, err)
	}
	if got != sum || gotSize != size {
		err := fmt.Errorf("backup: %s reads back from %s as %d bytes with SHA-256 %s; %d bytes with %s were stored", f.Name, key, gotSize, got, size, sum)
		// Its name promises content it does not hold: left there, the
		// next backup would reuse it.
		if derr := st.Delete(ctx, key); derr != nil {
			err = errors.Join(err, fmt.Errorf("backup: removing %s: %w", key, derr))
		}
		return f, false, err
	}
	return f, false, nil
}

func hashFile(path string) (string, int64, error) {
	r, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer r.Close()
	return hashReader(r)
}

func hashObject(ctx context.Context, st Store, key string) (string, int64, error) {
	r, err := st.Get(ctx, key)
	if err != nil {
		return "", 0, err
	}
	defer r.Close()
	return hashReader(r)
}

func hashReader(r io.Reader) (string, int64, error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return "", n, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// putManifest names the backup after now (a millisecond later per backup
// already so named) and stores its manifest, read back to check it.
func putManifest(ctx context.Context, st Store, m *Manifest, now time.Time) error {
	now = now.UTC().Truncate(time.Millisecond)
	for {
		m.ID = now.Format(idLayout)
		if _, err := st.Size(ctx, manifestKey(m.ID)); errors.Is(err, fs.ErrNotExist) {
			break
		} else if err != nil {
			return err
		}
		now = now.Add(time.Millisecond)
	}
	m.Created = now
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := st.Put(ctx, manifestKey(m.ID), strings.NewReader(string(b)), int64(len(b))); err != nil {
		return fmt.Errorf("backup: storing the manifest: %w", err)
	}
	back, err := readManifest(ctx, st, m.ID)
	if err != nil {
		return fmt.Errorf("backup: reading back the manifest: %w", err)
	}
	if back.Digest != m.Digest {
		return fmt.Errorf("backup: the manifest of %s reads back different", m.ID)
	}
	return nil
}

func manifestKey(id string) string { return backupsPrefix + id + manifestSuffix }

// maxManifestSize bounds what readManifest reads: a DB of millions of
// files would still fit.
const maxManifestSize = 256 << 20

// readManifest reads and checks the manifest of backup id.
func readManifest(ctx context.Context, st Store, id string) (*Manifest, error) {
	r, err := st.Get(ctx, manifestKey(id))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("backup: no backup %q in the backup set: %w", id, err)
		}
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxManifestSize+1))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil || len(b) > maxManifestSize {
		return nil, &CorruptError{ID: id, Reason: fmt.Sprintf("manifest %s does not parse: %v", manifestKey(id), err)}
	}
	if m.Format != manifestFormat {
		return nil, fmt.Errorf("backup: %s: manifest format %d; this lsmgo reads format %d", id, m.Format, manifestFormat)
	}
	if m.ID != id || m.Digest != digest(m.Files) {
		return nil, &CorruptError{ID: id, Reason: fmt.Sprintf("manifest %s does not match its digest", manifestKey(id))}
	}
	for _, f := range m.Files {
		if !validName(f.Name) || f.Size < 0 || len(f.SHA256) != 2*sha256.Size {
			return nil, &CorruptError{ID: id, File: f.Name, Reason: "not a file name, size and SHA-256"}
		}
	}
	return &m, nil
}

// validName accepts the plain file names a DB directory holds, so that a
// hostile manifest cannot make Restore write outside its directory.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, `/\`) && filepath.Base(name) == name
}

// List returns the IDs of the backups in st, oldest first.
func List(ctx context.Context, st Store) ([]string, error) {
	keys, err := st.List(ctx, backupsPrefix)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, k := range keys {
		if id, ok := strings.CutSuffix(strings.TrimPrefix(k, backupsPrefix), manifestSuffix); ok && !strings.Contains(id, "/") {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Latest returns the ID of the newest backup in st.
func Latest(ctx context.Context, st Store) (string, error) {
	ids, err := List(ctx, st)
	if err != nil {
		return "", err
	}
	if len(ids) == 0 {
		return "", fmt.Errorf("backup: the backup set holds no backup: %w", fs.ErrNotExist)
	}
	return ids[len(ids)-1], nil
}

// Describe returns the manifest of backup id, checked.
func Describe(ctx context.Context, st Store, id string) (*Manifest, error) {
	return readManifest(ctx, st, id)
}

// RestoreTempSuffix ends the name of the directory Restore writes into
// before renaming it to its own name.
const RestoreTempSuffix = ".restore-tmp"

// Restore writes backup id (the newest when id is "") from st into dir,
// which must not exist or be empty. Every file is checked against the
// manifest's size and SHA-256 as it is written, into dir+RestoreTempSuffix,
// synced, and renamed to dir only when all match: a damaged backup fails
// with a *CorruptError naming the file, and leaves dir as it was.
func Restore(ctx context.Context, st Store, id, dir string) (*Manifest, error) {
	if id == "" {
		var err error
		if id, err = Latest(ctx, st); err != nil {
			return nil, err
		}
	}
	m, err := readManifest(ctx, st, id)
	if err != nil {
		return nil, err
	}
	if names, err := os.ReadDir(dir); err == nil && len(names) > 0 {
		return nil, fmt.Errorf("backup: restore into %s: %w (the directory is not empty)", dir, fs.ErrExist)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	tmp := filepath.Clean(dir) + RestoreTempSuffix
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	// dir's own entry is synced after the rename; the directories above
	// it, if new, must be durable too.
	if err := vfs.MkdirAllSynced(vfs.Default, filepath.Dir(filepath.Clean(dir)), 0o755); err != nil {
		return nil, err
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, err
	}
	if err := restoreFiles(ctx, st, m, tmp); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	// An empty dir is replaced; rename cannot replace it on every OS.
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	return m, syncDir(filepath.Dir(filepath.Clean(dir)))
}

func restoreFiles(ctx context.Context, st Store, m *Manifest, tmp string) error {
	for _, f := range m.Files {
		if err := restoreFile(ctx, st, m.ID, f, filepath.Join(tmp, f.Name)); err != nil {
			return err
		}
	}
	return syncDir(tmp)
}

func restoreFile(ctx context.Context, st Store, id string, f File, path string) error {
	r, err := st.Get(ctx, dataPrefix+f.SHA256)
	if errors.Is(err, fs.ErrNotExist) {
		return &CorruptError{ID: id, File: f.Name, Reason: fmt.Sprintf("object %s%s is missing", dataPrefix, f.SHA256)}
	}
	if err != nil {
		return err
	}
	defer r.Close()
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	h := sha256.New()
	// One byte past the size shows an object that is too long.
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(r, f.Size+1))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backup: restoring %s: %w", f.Name, err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); n != f.Size || sum != f.SHA256 {
		return &CorruptError{ID: id, File: f.Name, Reason: fmt.Sprintf("object %s%s holds %d bytes with SHA-256 %s; the manifest says %d bytes with %s",
			dataPrefix, f.SHA256, n, sum, f.Size, f.SHA256)}
	}
	return nil
}

func syncDir(dir string) error { return vfs.SyncDir(vfs.Default, dir) }
