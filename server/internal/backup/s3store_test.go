package backup

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/internal/s3test"
)

// s3Set starts SeaweedFS for t and returns a backup set in a bucket on it.
func s3Set(t *testing.T) (Store, *s3test.Server) {
	t.Helper()
	srv := s3test.Start(t)
	if err := srv.CreateBucket("lsmgo-backups"); err != nil {
		t.Fatal(err)
	}
	st, err := OpenStore("s3://lsmgo-backups/sets/one?endpoint="+srv.Endpoint+"&region="+s3test.Region,
		S3Credentials{AccessKey: srv.AccessKey, SecretKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	return st, srv
}

// TestBackupRestoreS3 runs the directory set's round trip against a real
// S3 server: three backups of a live DB, incremental, each restored.
func TestBackupRestoreS3(t *testing.T) {
	st, _ := s3Set(t)
	testBackupRestore(t, st)
}

// TestS3Store checks the S3 store's contract where it maps S3's answers:
// a missing object, listing under the prefix, replacing and deleting,
// and a restore that meets a damaged object, and S3 going down.
func TestS3Store(t *testing.T) {
	ctx := context.Background()
	st, srv := s3Set(t)
	if _, err := st.Get(ctx, "data/none"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Get of a missing object = %v; want ErrNotExist", err)
	}
	if _, err := st.Size(ctx, "data/none"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Size of a missing object = %v; want ErrNotExist", err)
	}
	for _, k := range []string{"a/1", "a/2", "b/1"} {
		if err := st.Put(ctx, k, strings.NewReader(k), int64(len(k))); err != nil {
			t.Fatal(err)
		}
	}
	if keys, err := st.List(ctx, "a/"); err != nil || strings.Join(keys, ",") != "a/1,a/2" {
		t.Fatalf("List(a/) = %q, %v", keys, err)
	}
	if err := st.Delete(ctx, "a/1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Size(ctx, "a/1"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Size after Delete = %v", err)
	}

	tmp := t.TempDir()
	db := openDB(t, tmp)
	fill(t, db, 0, 300)
	m, _, err := DB(ctx, db, filepath.Join(tmp, "scratch"), st)
	if err != nil {
		t.Fatal(err)
	}
	victim := m.Files[0]
	for _, f := range m.Files {
		if strings.HasSuffix(f.Name, ".sst") {
			victim = f
		}
	}
	r, err := st.Get(ctx, dataPrefix+victim.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte{}, orig...)
	bad[len(bad)/2] ^= 1
	if err := st.Put(ctx, dataPrefix+victim.SHA256, strings.NewReader(string(bad)), int64(len(bad))); err != nil {
		t.Fatal(err)
	}
	var ce *CorruptError
	if _, err := Restore(ctx, st, m.ID, filepath.Join(tmp, "restore")); !errors.As(err, &ce) || ce.File != victim.Name {
		t.Fatalf("Restore of a damaged object = %v; want a *CorruptError naming %s", err, victim.Name)
	}

	// S3 down: the backup fails and leaves no backup behind.
	srv.Stop()
	short, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	fill(t, db, 300, 400)
	if _, _, err := DB(short, db, filepath.Join(tmp, "scratch"), st); err == nil {
		t.Fatal("a backup to a stopped S3 server succeeded")
	}
}
