package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"testing"
	"time"
)

// oneObject is a Store holding one object, for the fuzz target.
type oneObject struct {
	key  string
	data []byte
}

func (o oneObject) Put(context.Context, string, io.Reader, int64) error {
	return errors.ErrUnsupported
}

func (o oneObject) Get(_ context.Context, key string) (io.ReadCloser, error) {
	if key != o.key {
		return nil, fs.ErrNotExist
	}
	return io.NopCloser(bytes.NewReader(o.data)), nil
}

func (o oneObject) Size(_ context.Context, key string) (int64, error) {
	if key != o.key {
		return 0, fs.ErrNotExist
	}
	return int64(len(o.data)), nil
}

func (o oneObject) List(context.Context, string) ([]string, error) { return []string{o.key}, nil }

func (o oneObject) Delete(context.Context, string) error { return errors.ErrUnsupported }

// FuzzReadManifest feeds arbitrary bytes to the manifest reader, which
// reads what a backup set (a directory anyone may have written, or a
// bucket) holds: it must not panic, and what it accepts must be safe for
// Restore to act on.
func FuzzReadManifest(f *testing.F) {
	files := []File{{Name: "000005.sst", Size: 10, SHA256: string(bytes.Repeat([]byte("ab"), 32))}}
	good, _ := json.Marshal(Manifest{Format: manifestFormat, ID: "x", Created: time.Unix(0, 0).UTC(), Files: files, Digest: digest(files)})
	f.Add(good)
	f.Add([]byte(`{"format":1,"id":"x","files":[{"name":"../x","size":1,"sha256":""}]}`))
	f.Add([]byte(`{"format":1,"id":"x","files":null,"digest":"4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := readManifest(context.Background(), oneObject{key: manifestKey("x"), data: data}, "x")
		if err != nil {
			return
		}
		if m.ID != "x" || m.Digest != digest(m.Files) {
			t.Fatalf("accepted a manifest whose ID or digest is wrong: %+v", m)
		}
		for _, f := range m.Files {
			if !validName(f.Name) || f.Size < 0 || len(f.SHA256) != 64 {
				t.Fatalf("accepted a manifest with file %+v", f)
			}
		}
	})
}
