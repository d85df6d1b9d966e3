package imgbed

import (
	"bytes"
	"context"
	"image"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo"
)

// TestDownloadOutlivesDelete starts downloads of originals kept in one
// chunk (read in place from the DB) and in several (through a snapshot),
// each by a client whose small receive buffer stops the server early;
// then deletes the images and compacts until no table points to their
// bytes; then reads the rest. Every download gets the whole image: the
// engine keeps a blob file a download reads until the download ends, and
// deletes it after.
func TestDownloadOutlivesDelete(t *testing.T) {
	for _, tc := range []struct {
		name  string
		chunk int
	}{{"one chunk", 4 << 20}, {"chunks", 256 << 10}} {
		t.Run(tc.name, func(t *testing.T) {
			// Small memtables make small blob files, so the image's file
			// is retired (no longer pinned as the active file) once a
			// later value is written.
			th := newTestHostOn(t, Config{ChunkSize: tc.chunk}, &lsmgo.Options{MemTableSize: 64 << 10})
			img := image.NewNRGBA(image.Rect(0, 0, 600, 500))
			rng := rand.New(rand.NewPCG(3, 4))
			for i := range img.Pix {
				img.Pix[i] = byte(rng.Uint32())
			}
			data := encodePNG(t, img)
			_, r := th.uploadRaw(t, data, "image/png")
			if !r.Status {
				t.Fatalf("upload: %+v", r)
			}
			th.uploadRaw(t, noiseJPEG(t), "image/jpeg") // retires the big one's file
			// Small socket buffers on both sides keep the server from
			// handing the whole image to the kernel at once.
			srv := httptest.NewUnstartedServer(th.Handler())
			srv.Listener = smallBufListener{srv.Listener}
			srv.Start()
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if err == nil {
					c.(*net.TCPConn).SetReadBuffer(64 << 10)
				}
				return c, err
			}}}
			resp, err := client.Get(srv.URL + "/i/" + path.Base(r.Data.Links.URL))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			head := make([]byte, 1000)
			if _, err := io.ReadFull(resp.Body, head); err != nil {
				t.Fatal(err)
			}
			if _, err := th.st.removeImage(r.Data.Key, func(*record) bool { return true }); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if err := th.db.Compact(nil, nil); err != nil {
					t.Fatal(err)
				}
			}
			m := th.db.Metrics()
			if tc.chunk > len(data) && m.Blob.ReferencedBytes >= int64(len(data)) || m.Blob.Bytes < int64(len(data)) {
				t.Fatalf("after the delete: tables point to %d blob bytes of %d on disk; want less than the image's %d, and the image's bytes still there",
					m.Blob.ReferencedBytes, m.Blob.Bytes, len(data))
			}
			rest, err := io.ReadAll(resp.Body)
			if err != nil || !bytes.Equal(append(head, rest...), data) {
				t.Fatalf("download after the delete: %d bytes, %v; want the %d uploaded", len(head)+len(rest), err, len(data))
			}
			resp.Body.Close()
			if _, body := th.get(t, r.Data.Links.URL); !bytes.Contains(body, []byte("not_found")) && len(body) == len(data) {
				t.Fatal("the deleted image is still served")
			}
		})
	}
}

// smallBufListener gives every connection it accepts a small send buffer.
type smallBufListener struct{ net.Listener }

func (l smallBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		c.(*net.TCPConn).SetWriteBuffer(64 << 10)
	}
	return c, err
}

// TestServedRecordsFollowTheDB: GETs keep decoded records and metadata
// (decodedCache), but every GET reads the value from the DB, so a change
// made under the host (as replication or a restore makes them) is served
// at once: a record rewritten with another extension, then deleted.
func TestServedRecordsFollowTheDB(t *testing.T) {
	th := newTestHost(t, Config{})
	data := encodePNG(t, gradient(64, 48))
	_, r := th.uploadRaw(t, data, "image/png")
	for range 2 { // the second GET is served from the decoded record
		if resp, body := th.get(t, r.URL); resp.StatusCode != 200 || !bytes.Equal(body, data) {
			t.Fatalf("GET: %d, %d bytes", resp.StatusCode, len(body))
		}
	}
	rec, err := th.st.record(r.Data.Key)
	if err != nil {
		t.Fatal(err)
	}
	rec.Ext = "gif"
	if err := th.db.Set(imageKey(rec.ID), encode(rec), nil); err != nil {
		t.Fatal(err)
	}
	if got := th.status(t, r.URL); got != 404 {
		t.Fatalf("GET by the old extension after the record changed: %d", got)
	}
	gif := strings.TrimSuffix(r.URL, ".png") + ".gif"
	if got := th.status(t, gif); got != 200 {
		t.Fatalf("GET by the new extension: %d", got)
	}
	if err := th.db.Delete(imageKey(rec.ID), nil); err != nil {
		t.Fatal(err)
	}
	if got := th.status(t, gif); got != 404 {
		t.Fatalf("GET after the record was deleted under the host: %d", got)
	}
	rec.Ext = "png" // as it was, for Check at the end
	if err := th.db.Set(imageKey(rec.ID), encode(rec), nil); err != nil {
		t.Fatal(err)
	}
}
