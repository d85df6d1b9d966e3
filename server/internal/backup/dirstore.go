package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// dirStore is a backup set in a local directory (or a mounted network
// filesystem): key a/b is the file <root>/a/b.
type dirStore struct {
	root string
}

// NewDirStore returns the backup set in directory root, created on the
// first Put.
func NewDirStore(root string) Store { return &dirStore{root: root} }

func (d *dirStore) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || slices.Contains(strings.Split(key, "/"), "..") {
		return "", fmt.Errorf("backup: bad key %q", key)
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Put writes the object into a temporary file beside it, syncs it,
// renames it into place and syncs the directory: a crash leaves the old
// object or the new one whole, and a temporary file no key names.
func (d *dirStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	dir := filepath.Dir(p)
	// A new data/ or backups/ (or the set's root) must not be lost in a
	// crash after the objects in it were synced.
	if err := vfs.MkdirAllSynced(vfs.Default, dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	n, err := io.Copy(f, r)
	if err == nil && n != size {
		err = fmt.Errorf("backup: %s: read %d bytes, want %d", key, n, size)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	return syncDir(dir)
}

func (d *dirStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

func (d *dirStore) Size(ctx context.Context, key string) (int64, error) {
	p, err := d.path(key)
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("backup: %s: not a regular file", p)
	}
	return fi.Size(), nil
}

// List walks the directory the prefix names (prefixes here always end in
// a slash) and skips temporary files of interrupted Puts.
func (d *dirStore) List(ctx context.Context, prefix string) ([]string, error) {
	base := filepath.Join(d.root, filepath.FromSlash(prefix))
	var keys []string
	err := filepath.WalkDir(base, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".tmp-") {
			rel, err := filepath.Rel(d.root, p)
			if err != nil {
				return err
			}
			keys = append(keys, filepath.ToSlash(rel))
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	slices.Sort(keys)
	return keys, err
}

func (d *dirStore) Delete(ctx context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return syncDir(filepath.Dir(p))
}
