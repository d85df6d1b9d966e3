package server

import (
	"bytes"
	"image"
	"image/png"
	"io"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/internal/s3test"
)

// TestImageBlobStoreS3 runs the server with blob-store pointing at an S3
// bucket: an uploaded image's bytes are an object there, under the
// prefix, and the image link serves them.
func TestImageBlobStoreS3(t *testing.T) {
	s3 := s3test.Start(t)
	if err := s3.CreateBucket("images"); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(c *Config) {
		c.BlobStore = "s3://images/lsmgo?endpoint=" + s3.Endpoint
		c.S3AccessKey, c.S3SecretKey = s3.AccessKey, s3.SecretKey
	})
	base := "http://" + s.HTTPAddr()
	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, 40, 30)))
	status, link := upload(t, base, "", buf.Bytes())
	if status != 201 {
		t.Fatalf("upload: %d", status)
	}
	if code, body := httpGet(t, link); code != 200 || body != buf.String() {
		t.Fatalf("GET %s: %d, %d bytes", link, code, len(body))
	}
	resp, err := s3.Do("GET", "/images?list-type=2", nil)
	if err != nil {
		t.Fatal(err)
	}
	list, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := strings.Count(string(list), "<Key>lsmgo/"); resp.StatusCode != 200 || n != 1 || strings.Count(string(list), "<Key>") != 1 {
		t.Fatalf("bucket listing: %s: %s, want one object under lsmgo/", resp.Status, list)
	}
}
