package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo"
	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
)

func testOptions() *lsmgo.Options {
	return &lsmgo.Options{
		Logger:         slog.New(slog.DiscardHandler),
		MemTableSize:   64 << 10,
		ValueThreshold: 512,
	}
}

// fill writes keys [from, to) with values some of which are separated
// into blob files.
func fill(t *testing.T, db *lsmgo.DB, from, to int) {
	t.Helper()
	// Batches of 50, to spare the test an fsync per key.
	for lo := from; lo < to; lo += 50 {
		b := db.NewBatch()
		for i := lo; i < min(lo+50, to); i++ {
			b.Set(key(i), value(i))
		}
		if err := db.Apply(b, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func key(i int) []byte { return fmt.Appendf(nil, "key-%06d", i) }

func value(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 1+i%1500) }

// checkDB checks that the DB in dir holds exactly keys [0, n).
func checkDB(t *testing.T, dir string, n int) {
	t.Helper()
	got := testutil.ReadDB(t, dir, testOptions())
	for i := range n {
		if v, ok := got[string(key(i))]; !ok || v != string(value(i)) {
			t.Fatalf("%s: %s is %d bytes (present %v); want %d", dir, key(i), len(v), ok, len(value(i)))
		}
	}
	if len(got) != n {
		t.Fatalf("%s holds %d keys; want %d", dir, len(got), n)
	}
}

// openDB opens a DB in dir/db for the test, closed when it ends.
func openDB(t *testing.T, dir string) *lsmgo.DB {
	t.Helper()
	db, err := lsmgo.Open(filepath.Join(dir, "db"), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestBackupRestoreDir backs a live DB up three times into a directory
// set and restores each backup: the second and third upload only what
// changed, and each restore holds exactly what its backup held.
func TestBackupRestoreDir(t *testing.T) {
	testBackupRestore(t, NewDirStore(t.TempDir()))
}

func testBackupRestore(t *testing.T, st Store) {
	ctx := context.Background()
	tmp := t.TempDir()
	db := openDB(t, tmp)
	scratch := filepath.Join(tmp, "scratch")
	var ids []string
	var counts []int
	for round, n := range []int{1000, 1000, 1300} {
		fill(t, db, 0, n)
		m, stats, err := DB(ctx, db, scratch, st)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("backup %s: %s", m.ID, stats)
		if stats.Files != len(m.Files) || stats.Uploaded+stats.Reused != stats.Files {
			t.Fatalf("stats %+v do not add up to the %d files", stats, len(m.Files))
		}
		if round > 0 && stats.Reused == 0 {
			t.Fatalf("backup %d reused no file of the earlier ones: %s", round, stats)
		}
		if _, err := os.Stat(scratch); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("the checkpoint was left behind: %v", err)
		}
		ids, counts = append(ids, m.ID), append(counts, n)
	}
	got, err := List(ctx, st)
	if err != nil || strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Fatalf("List = %q, %v; want %q", got, err, ids)
	}
	for i, id := range ids {
		dir := filepath.Join(tmp, "restore-"+id)
		if _, err := Restore(ctx, st, id, dir); err != nil {
			t.Fatal(err)
		}
		checkDB(t, dir, counts[i])
	}
	// The newest is the default, and an empty directory may take it.
	dir := filepath.Join(tmp, "latest")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := Restore(ctx, st, "", dir)
	if err != nil || m.ID != ids[len(ids)-1] {
		t.Fatalf("Restore of the newest = %v, %v", m, err)
	}
	checkDB(t, dir, counts[len(counts)-1])
	if _, err := Restore(ctx, st, "", dir); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Restore into a non-empty directory = %v", err)
	}
}

// TestRestoreRefusesDamage damages a backup in each way a set can be
// damaged: Restore names the file and leaves no directory behind.
func TestRestoreRefusesDamage(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	db := openDB(t, tmp)
	fill(t, db, 0, 500)
	root := filepath.Join(tmp, "set")
	st := NewDirStore(root)
	m, _, err := DB(ctx, db, filepath.Join(tmp, "scratch"), st)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	var table File
	for _, f := range m.Files {
		if strings.HasSuffix(f.Name, ".sst") {
			table = f
		}
	}
	obj := filepath.Join(root, "data", table.SHA256)
	manifest := filepath.Join(root, "backups", m.ID+".json")
	orig, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	origManifest, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, file string
		damage     func() error
	}{
		{"flipped byte", table.Name, func() error {
			b := bytes.Clone(orig)
			b[len(b)/2] ^= 1
			return os.WriteFile(obj, b, 0o644)
		}},
		{"truncated", table.Name, func() error { return os.WriteFile(obj, orig[:len(orig)-1], 0o644) }},
		{"too long", table.Name, func() error { return os.WriteFile(obj, append(bytes.Clone(orig), 0), 0o644) }},
		{"missing", table.Name, func() error { return os.Remove(obj) }},
		{"manifest edited", "", func() error {
			return os.WriteFile(manifest, bytes.Replace(origManifest, []byte(table.Name), []byte("000999.sst"), 1), 0o644)
		}},
		{"manifest cut", "", func() error { return os.WriteFile(manifest, origManifest[:len(origManifest)/2], 0o644) }},
	} {
		if err := c.damage(); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(tmp, "restore")
		_, err := Restore(ctx, st, m.ID, dir)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.File != c.file || !strings.Contains(err.Error(), m.ID) {
			t.Errorf("%s: Restore = %v; want a *CorruptError naming %q", c.name, err, c.file)
		}
		for _, d := range []string{dir, dir + RestoreTempSuffix} {
			if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: %s exists after a failed restore (%v)", c.name, d, err)
			}
		}
		if err := os.WriteFile(obj, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(manifest, origManifest, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Restore(ctx, st, m.ID, filepath.Join(tmp, "restore")); err != nil {
		t.Fatalf("Restore after undoing the damage: %v", err)
	}
}

// lossyStore damages every object it stores after the first byte.
type lossyStore struct{ Store }

func (l lossyStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if len(b) > 1 {
		b[1] ^= 0xff
	}
	return l.Store.Put(ctx, key, bytes.NewReader(b), size)
}

// TestUploadVerifies checks that an object that does not read back as it
// was sent fails the backup, which then has no manifest, and is removed,
// so that the next backup does not take it for a good copy.
func TestUploadVerifies(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	db := openDB(t, tmp)
	fill(t, db, 0, 100)
	st := NewDirStore(filepath.Join(tmp, "set"))
	if _, _, err := DB(ctx, db, filepath.Join(tmp, "scratch"), lossyStore{st}); err == nil || !strings.Contains(err.Error(), "reads back") {
		t.Fatalf("backup through a lossy store = %v; want a read-back mismatch", err)
	}
	if ids, err := List(ctx, st); err != nil || len(ids) != 0 {
		t.Fatalf("a failed backup left backups %q (%v)", ids, err)
	}
	// The next backup replaces the damaged objects.
	m, stats, err := DB(ctx, db, filepath.Join(tmp, "scratch"), st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(ctx, st, m.ID, filepath.Join(tmp, "restore")); err != nil {
		t.Fatalf("restore after a failed backup (%s): %v", stats, err)
	}
	checkDB(t, filepath.Join(tmp, "restore"), 100)
}

// TestBackupIDsAreUnique takes backups faster than the clock ticks.
func TestBackupIDsAreUnique(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := NewDirStore(t.TempDir())
	now := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	for range 3 {
		if _, _, err := Upload(ctx, st, src, now); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := List(ctx, st)
	if err != nil || len(ids) != 3 {
		t.Fatalf("List = %q, %v; want 3 backups", ids, err)
	}
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"000001.sst": true, "CURRENT": true, "": false, ".": false, "..": false,
		"../x": false, "a/b": false, `a\b`: false, "/x": false,
	} {
		if validName(name) != want {
			t.Errorf("validName(%q) = %v", name, !want)
		}
	}
}
