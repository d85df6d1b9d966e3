package server

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestImageHostOnReplica runs the image host on a replica: it serves the
// primary's images and renders of them, refuses uploads, deletes and
// view-limited images with 503 and a reason, and writes nothing of its
// own (no stored render), so it stays an exact copy of the primary.
func TestImageHostOnReplica(t *testing.T) {
	primary := startServer(t, nil)
	if err := newClient(t, primary, 1, nil).Set(context.Background(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	pbase := "http://" + primary.HTTPAddr()
	img := image.NewNRGBA(image.Rect(0, 0, 300, 200))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	img.Set(0, 0, color.NRGBA{1, 2, 3, 255})
	var buf bytes.Buffer
	png.Encode(&buf, img)
	data := buf.Bytes()
	status, link := upload(t, pbase, "", data)
	if status != 201 {
		t.Fatalf("upload to the primary: %d", status)
	}
	status, limited := upload(t, pbase+"/api/v1/upload?max_views=1&x=", "", append(bytes.Clone(data), 0))
	if status != 201 {
		t.Fatalf("upload of a view-limited image: %d", status)
	}

	replica := startServer(t, func(c *Config) { c.ReplicaOf = strings.Replace(primary.Addr().String(), ":", " ", 1) })
	waitReplicated(t, primary, replica)
	rbase := "http://" + replica.HTTPAddr()
	onReplica := func(u string) string { return rbase + strings.TrimPrefix(u, pbase) }
	before := lastSeq(replica)

	get := func(u string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	if code, body := get(onReplica(link)); code != 200 || !bytes.Equal(body, data) {
		t.Fatalf("the image on the replica: %d, %d bytes", code, len(body))
	}
	thumb := strings.Replace(onReplica(link), "/i/", "/t/", 1)
	for _, q := range []string{"?w=64", ".webp?w=100&h=50&fit=cover"} {
		u := thumb + q
		if strings.HasPrefix(q, ".") {
			u = strings.TrimSuffix(thumb, ".png") + q
		}
		for range 2 { // rendered each time, never stored
			if code, body := get(u); code != 200 || len(body) == 0 {
				t.Fatalf("render %s on the replica: %d", q, code)
			}
		}
	}
	// Views are counted by the primary only: a replica serving them
	// would lift the limit.
	if code, _ := get(onReplica(limited)); code != http.StatusServiceUnavailable {
		t.Fatalf("view-limited image on the replica: %d, want 503", code)
	}
	if after := lastSeq(replica); after != before {
		t.Fatalf("GETs on the replica wrote %d batches of its own", after-before)
	}

	status, _ = upload(t, rbase, "", data)
	if status != http.StatusServiceUnavailable {
		t.Fatalf("upload to the replica: %d, want 503", status)
	}
	req, _ := http.NewRequest("DELETE", rbase+"/api/v1/albums/x", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var reply struct{ Message string }
	json.NewDecoder(resp.Body).Decode(&reply)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(reply.Message, "replica") {
		t.Fatalf("DELETE on the replica: %d, Retry-After %q, %q", resp.StatusCode, resp.Header.Get("Retry-After"), reply.Message)
	}

	// The primary counts the views: its first GET is the last allowed.
	if code, _ := get(limited); code != 200 {
		t.Fatalf("view-limited image on the primary: %d", code)
	}
	if code, _ := get(limited); code != http.StatusNotFound {
		t.Fatalf("view-limited image past its views on the primary: %d, want 404", code)
	}
	waitReplicated(t, primary, replica)
}
