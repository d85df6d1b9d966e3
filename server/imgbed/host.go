package imgbed

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// Host is an image host over one DB. Its methods are safe for concurrent
// use.
type Host struct {
	cfg          Config
	st           *store
	auth         atomic.Pointer[tokenSet]
	limiter      *rateLimiter // anonymous uploads, per IP address
	tokenLimiter *rateLimiter
	uploads      *uploadSlots
	resumables   *resumables
	fetch        *http.Client // uploads by URL (fetch.go)
	thumbs       *thumbnailer
	metrics      *metrics
	now          func() time.Time
	// The decoded records and metadata of GETs (decodedCache).
	records *decodedCache[record]
	metas   *decodedCache[blobMeta]
	// plainHeld counts the bytes of bodies ServePlain holds in memory
	// for answers under way; bodies keeps hot ones between answers.
	plainHeld atomic.Int64
	bodies    *bodyCache
}

// New returns a host storing its images in db. It first removes the
// chunks that a crash left unreferenced (doc.go) and the spool files left
// in Config.SpoolDir, so it must not run while another Host serves the
// same DB or spools to the same directory.
func New(db *lsmgo.DB, cfg Config) (*Host, error) {
	cfg = cfg.withDefaults()
	resumableDir := filepath.Join(cfg.SpoolDir, "resumable")
	if cfg.SpoolDir == "" {
		// Nowhere that outlives this host: a directory of its own.
		dir, err := os.MkdirTemp("", "imgbed-resumable-")
		if err != nil {
			return nil, err
		}
		resumableDir = dir
	}
	if cfg.SpoolDir == "" {
		// Other programs' files live there too: nothing is cleaned.
		cfg.SpoolDir = os.TempDir()
	} else if err := prepareSpoolDir(cfg.SpoolDir); err != nil {
		return nil, fmt.Errorf("imgbed: spool directory: %w", err)
	}
	h := &Host{
		cfg:          cfg,
		st:           newStore(db, cfg.ChunkSize),
		limiter:      newRateLimiter(cfg.UploadRate, cfg.UploadBurst),
		tokenLimiter: newRateLimiter(cfg.TokenUploadRate, cfg.TokenUploadBurst),
		uploads:      newUploadSlots(cfg.MaxConcurrentUploads, cfg.MaxUploadsPerClient),
		now:          time.Now,
		records:      newDecodedCache[record]("image record"),
		metas:        newDecodedCache[blobMeta]("blob metadata"),
		bodies:       newBodyCache(cfg.HotBodyBytes),
	}
	if cfg.BlobStore != "" {
		o, err := parseS3URL(cfg.BlobStore)
		if err != nil {
			return nil, err
		}
		remote, err := newS3Blobs(o, cfg.S3AccessKey, cfg.S3SecretKey)
		if err != nil {
			return nil, err
		}
		h.st.remote, h.st.originals = remote, remote
		if o.remoteThumbnails {
			h.st.thumbnails = remote
		}
	}
	h.st.now = func() time.Time { return h.now() } // tests replace h.now
	h.st.follows = h.cfg.follows
	rs, err := newResumables(resumableDir)
	if err != nil {
		return nil, fmt.Errorf("imgbed: resumable upload directory: %w", err)
	}
	h.resumables = rs
	rs.lastSweep = h.now() // swept below
	h.fetch = newFetchClient(cfg.FetchTimeout, h.fetchAllowed)
	h.thumbs = newThumbnailer(h)
	h.SetTokens(cfg.Tokens)
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	h.metrics = m
	if h.cfg.follows() {
		// The pending markers and upload states are the primary's, for
		// uploads it may still finish; it sweeps and migrates, and its
		// batches bring the result.
		return h, nil
	}
	if _, err := h.st.sweep(); err != nil {
		return nil, err
	}
	if err := h.st.indexOwners(); err != nil {
		return nil, err
	}
	if err := h.sweepResumables(0); err != nil {
		return nil, err
	}
	cfg.Reclaimer.attach(h.st)
	return h, nil
}

// SetTokens replaces the upload tokens; requests already authenticated
// finish with the old set.
func (h *Host) SetTokens(tokens []Token) { h.auth.Store(newTokenSet(tokens)) }

// Handler returns the host's HTTP routes:
//
//	GET  /                         the upload page
//	POST /api/v1/upload, /upload   upload (multipart or a raw body)
//	GET  /i/{id}.{ext}             an original
//	GET  /t/{id}.{ext}?w=N         a thumbnail
//	GET  /api/v1/images/{id}       metadata
//	DELETE /api/v1/images/{id}     delete (delete token, owner or admin)
//	GET, POST /d/{id}?token=       delete from a link, with a confirmation
//	GET  /api/v1/images?page=N     uploads: all for an admin, else the token's own
//	GET  /api/v1/sharex.sxcu, /api/v1/picgo.json   uploader configurations
//	POST, GET /api/v1/albums       create an album, list the token's albums
//	GET, PATCH, DELETE /api/v1/albums/{id}   an album and its images, edit, delete
//	PUT, DELETE /api/v1/albums/{id}/images/{key}   add or remove an image
//	GET  /a/{id}                   an album's public page
//	POST, DELETE /api/v1/tokens, GET /api/v1/profile, /api/v1/strategies   Lsky Pro V1
//	OPTIONS, POST /api/v1/tus/; HEAD, PATCH, DELETE, GET /api/v1/tus/{id}   resumable uploads (tus)
//
// An upload may also name an image to fetch (?url=, a "url" field, or a
// JSON body): fetch.go.
func (h *Host) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.servePage)
	mux.HandleFunc("GET /assets/", h.serveAsset)
	mux.HandleFunc("POST /api/v1/upload", h.serveUpload)
	mux.HandleFunc("POST /upload", h.serveUpload)
	mux.HandleFunc("GET /i/{file}", h.serveOriginal)
	mux.HandleFunc("GET /t/{file}", h.serveThumbnail)
	mux.HandleFunc("GET /api/v1/images/{id}", h.serveMeta)
	mux.HandleFunc("DELETE /api/v1/images/{id}", h.serveDelete)
	mux.HandleFunc("GET /d/{id}", h.serveDeletePage)
	mux.HandleFunc("POST /d/{id}", h.serveDeletePage)
	mux.HandleFunc("GET /api/v1/images", h.serveList)
	mux.HandleFunc("GET /api/v1/sharex.sxcu", h.serveShareX)
	mux.HandleFunc("GET /api/v1/picgo.json", h.servePicGo)
	mux.HandleFunc("POST /api/v1/albums", h.serveAlbumCreate)
	mux.HandleFunc("GET /api/v1/albums", h.serveAlbums)
	mux.HandleFunc("GET /api/v1/albums/{id}", h.serveAlbum)
	mux.HandleFunc("PATCH /api/v1/albums/{id}", h.serveAlbumEdit)
	mux.HandleFunc("DELETE /api/v1/albums/{id}", h.serveAlbumDelete)
	mux.HandleFunc("PUT /api/v1/albums/{id}/images/{key}", h.serveAlbumMember)
	mux.HandleFunc("DELETE /api/v1/albums/{id}/images/{key}", h.serveAlbumMember)
	mux.HandleFunc("GET /a/{id}", h.serveAlbumPage)
	mux.HandleFunc("POST /api/v1/tokens", h.serveTokens)
	mux.HandleFunc("DELETE /api/v1/tokens", h.serveRevokeTokens)
	mux.HandleFunc("GET /api/v1/profile", h.serveProfile)
	mux.HandleFunc("GET /api/v1/strategies", h.serveStrategies)
	for _, p := range []string{"/api/v1/tus", tusPath + "{$}"} {
		mux.HandleFunc("OPTIONS "+p, h.serveTusOptions)
		mux.HandleFunc("POST "+p, h.tus(h.serveTusCreate))
	}
	mux.HandleFunc("OPTIONS "+tusPath+"{id}", h.serveTusOptions)
	mux.HandleFunc("POST "+tusPath+"{id}", h.tus(nil)) // X-HTTP-Method-Override
	mux.HandleFunc("HEAD "+tusPath+"{id}", h.tus(h.serveTusHead))
	mux.HandleFunc("PATCH "+tusPath+"{id}", h.tus(h.serveTusPatch))
	mux.HandleFunc("DELETE "+tusPath+"{id}", h.tus(h.serveTusDelete))
	mux.HandleFunc("GET "+tusPath+"{id}", h.serveTusResult)
	return routes{h: h, mux: mux}
}

// apiError is a failed request: its status, the message clients see, and
// the reason label of the errors metric.
type apiError struct {
	status int
	reason string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

var (
	errUnsupported = &apiError{http.StatusUnsupportedMediaType, "type", "unsupported type: JPEG, PNG, GIF, WebP, AVIF and HEIC/HEIF are accepted"}
	errForbidden   = &apiError{http.StatusForbidden, "forbidden", "forbidden"}
)

// toAPIError maps any error of a request to what the client sees.
func toAPIError(err error) *apiError {
	var ae *apiError
	var inv *errInvalid
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &inv):
		return &apiError{http.StatusUnprocessableEntity, "invalid", inv.reason}
	case errors.Is(err, errTooLarge):
		return &apiError{http.StatusRequestEntityTooLarge, "too_large", "file too large"}
	case errors.Is(err, errNotFound):
		return &apiError{http.StatusNotFound, "not_found", "not found"}
	case errors.Is(err, errQuota):
		return &apiError{http.StatusForbidden, "quota", "quota exceeded"}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &apiError{http.StatusRequestTimeout, "timeout", "request body too slow"}
	case errors.As(err, new(*http.MaxBytesError)):
		return &apiError{http.StatusRequestEntityTooLarge, "too_large", "request too large"}
	case errors.Is(err, lsmgo.ErrReadOnly):
		return &apiError{http.StatusServiceUnavailable, "read_only", "storage is read-only"}
	}
	return &apiError{http.StatusInternalServerError, "internal", "internal error"}
}

// fail answers with Lsky Pro's error shape and counts the error.
func (h *Host) fail(w http.ResponseWriter, err error) {
	ae := toAPIError(err)
	h.metrics.errors.WithLabelValues(ae.reason).Inc()
	retryLater(w, ae.status)
	writeJSON(w, ae.status, map[string]any{"status": false, "message": ae.msg})
}

// defaultRetryAfter is the Retry-After of a 429 or 503 whose cause does not
// say how long it lasts (storage unavailable or read-only).
const defaultRetryAfter = 5 * time.Second

// retryLater gives every 429 and 503 a Retry-After, so clients (the
// page, ShareX, scripts) wait and retry instead of failing; a handler
// that knows the wait sets the header first.
func retryLater(w http.ResponseWriter, status int) {
	if (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) && w.Header().Get("Retry-After") == "" {
		setRetryAfter(w, defaultRetryAfter)
	}
}

// setRetryAfter writes d in whole seconds, rounded up and at least 1.
func setRetryAfter(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", itoa(max(1, int((d+time.Second-1)/time.Second))))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}
