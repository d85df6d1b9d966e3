package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
)

// referenceMaxBytes bounds one upload to the reference handler, as the
// image host's default does.
const referenceMaxBytes = 20 << 20

// ReferenceHandler is the practical bound for image uploads on a machine,
// which the image host's upload rate is measured against: it hashes each
// upload's body with SHA-256 while writing it to a new file, fsyncs the
// file and answers with a link, and nothing else (no validation, no
// dedup, no directory fsync). It also serves the files back with
// http.ServeFile, so the http mode's get workload runs against it too.
type ReferenceHandler struct {
	dir string
	n   atomic.Uint64
}

// NewReferenceHandler stores uploads in dir, which must exist.
func NewReferenceHandler(dir string) *ReferenceHandler {
	return &ReferenceHandler{dir: dir}
}

func (h *ReferenceHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && (r.URL.Path == "/api/v1/upload" || r.URL.Path == "/upload"):
		h.upload(w, r)
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.HasPrefix(r.URL.Path, "/i/"):
		name := strings.TrimPrefix(r.URL.Path, "/i/")
		num, ext, _ := strings.Cut(name, ".")
		if _, err := strconv.ParseUint(num, 10, 64); err != nil || (ext != "jpg" && ext != "bin") {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, filepath.Join(h.dir, name))
	default:
		http.NotFound(w, r)
	}
}

// upload stores one raw body.
func (h *ReferenceHandler) upload(w http.ResponseWriter, r *http.Request) {
	body := http.MaxBytesReader(w, r.Body, referenceMaxBytes)
	// The first bytes name the extension, as a real host would sniff
	// them; the rest streams through the hash into the file.
	var head [3]byte
	n, err := io.ReadFull(body, head[:])
	if err != nil && err != io.ErrUnexpectedEOF {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ext := "bin"
	if isJPEG(append(head[:n:n], 0)) {
		ext = "jpg"
	}
	name := fmt.Sprintf("%d.%s", h.n.Add(1), ext)
	f, err := os.OpenFile(filepath.Join(h.dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sum := sha256.New()
	out := io.MultiWriter(f, sum)
	var size int64
	if _, err = out.Write(head[:n]); err == nil {
		size, err = io.Copy(out, body)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(filepath.Join(h.dir, name))
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]any{
		"status": true,
		"url":    "http://" + r.Host + "/i/" + name,
		"data":   map[string]any{"size": size + int64(n), "sha256": hex.EncodeToString(sum.Sum(nil))},
	})
}
