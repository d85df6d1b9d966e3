package imgbed

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"net/http"
	"testing"
)

// TestMD5OnlyWhenAsked uploads distinct images: a plain client gets no
// MD5 (it is not computed), a Lsky client (Accept: application/json) and
// one asking with ?md5=1 get the MD5 of the stored bytes, large enough
// to be spooled to a file.
func TestMD5OnlyWhenAsked(t *testing.T) {
	th := newTestHost(t, Config{})
	for i, tc := range []struct {
		name, query, accept string
		want                bool
	}{
		{"plain", "", "", false},
		{"lsky", "", "application/json", true},
		{"asked", "?md5=1", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", th.srv.URL+"/api/v1/upload"+tc.query, bytes.NewReader(uniqueJPEG(noiseJPEG(t), uint64(i))))
			req.Header.Set("Content-Type", "image/jpeg")
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			resp, body := th.do(t, req)
			r := decodeResponse(t, body)
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("upload: %d %+v", resp.StatusCode, r)
			}
			_, stored := th.get(t, r.Data.Links.URL)
			sum := md5.Sum(stored)
			want := ""
			if tc.want {
				want = hex.EncodeToString(sum[:])
			}
			if r.Data.MD5 != want {
				t.Fatalf("md5 %q, want %q", r.Data.MD5, want)
			}
		})
	}
}
