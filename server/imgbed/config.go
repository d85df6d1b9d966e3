package imgbed

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults used for every zero field of Config.
const (
	DefaultMaxBytes             = 20 << 20
	DefaultMaxPixels            = 50_000_000
	DefaultMaxFilesPerRequest   = 10
	DefaultMaxConcurrentUploads = 64
	DefaultChunkSize            = 256 << 10
	DefaultReadIdleTimeout      = 30 * time.Second
	DefaultWriteIdleTimeout     = 30 * time.Second
	DefaultUploadTimeout        = 5 * time.Minute
	DefaultUploadQueueWait      = 5 * time.Second
	DefaultMinUploadRate        = 4 << 10 // bytes per second
	DefaultMinUploadRateWindow  = 10 * time.Second
	// An anonymous client (an IP address) may send a batch of
	// DefaultUploadBurst files at once, which covers the page's and
	// ShareX's batches of 100, then DefaultUploadRate a second.
	DefaultUploadRate  = 5
	DefaultUploadBurst = 120
	// A token gets its own, larger budget: it is a known uploader.
	DefaultTokenUploadRate  = 20
	DefaultTokenUploadBurst = 500
	DefaultPageSize         = 50
	// A resumable (tus) upload may be as large as a phone's panorama or
	// a camera's RAW-sized TIFF export; it is read in place, never held
	// in memory.
	DefaultResumableMaxBytes = 1 << 30
	DefaultResumableExpiry   = 24 * time.Hour
	// Enough open uploads for a client sending a few files at once, each
	// resumed later; not enough to fill a disk with abandoned ones.
	DefaultResumablePerClient      = 8
	DefaultResumableBytesPerClient = 4 << 30
	DefaultFetchTimeout            = 30 * time.Second
	// DefaultRenderMaxSide bounds each side of a rendered size.
	DefaultRenderMaxSide = 2048
	// DefaultRenderMemory fits one 50-megapixel JPEG decode (4 bytes a
	// pixel, 200 MB) or one 12-megapixel HEIC (the WebAssembly decoder's
	// ~20 bytes a pixel) at a time, beside smaller renders, and keeps the
	// host within 300 MB of RSS above idle while 8 clients upload
	// 50-megapixel images and fetch renders of them (TestRenderRSS).
	DefaultRenderMemory = 256 << 20
	// DefaultHotBodyBytes keeps a few hundred thumbnails and small
	// originals in memory for GETs.
	DefaultHotBodyBytes = 32 << 20
	// DefaultRendersPerImage bounds the box sizes (?h=, ?fit=) stored
	// for one original; further sizes are rendered but not stored.
	DefaultRendersPerImage = 32
)

// Anonymous says whether uploads without a token are accepted.
type Anonymous int

const (
	// AnonymousAuto accepts anonymous uploads only on connections that
	// arrived on a loopback address: a host that only listens locally is
	// a personal one.
	AnonymousAuto Anonymous = iota
	// AnonymousOn accepts anonymous uploads from anyone.
	AnonymousOn
	// AnonymousOff requires a token for every upload.
	AnonymousOff
)

// Token is one upload credential.
type Token struct {
	// Name identifies the token in records, quotas and metrics; it is not
	// secret.
	Name string
	// Secret is what clients send.
	Secret string
	// Admin tokens may list every image, delete any image and read the
	// uploader configurations with the token filled in.
	Admin bool
	// QuotaBytes and QuotaCount bound what the token may have stored at
	// once (deleting frees quota); zero means unlimited.
	QuotaBytes int64
	QuotaCount int64
}

// Config configures a Host. The zero value is valid: every zero field
// means its default.
type Config struct {
	// BaseURL is the public prefix of the links in responses, such as
	// "https://img.example.com". Empty: derived from each request's Host.
	BaseURL string
	// MaxBytes bounds one file (413 above it); default 20 MiB.
	MaxBytes int64
	// MaxPixels bounds width×height (422 above it); default 50 megapixels.
	MaxPixels int64
	// MaxFilesPerRequest bounds the files of one multipart upload.
	MaxFilesPerRequest int
	// MaxConcurrentUploads bounds the uploads reading their bodies at
	// once; others wait. Together with the per-upload buffers (1 MiB
	// each: an image up to that size is held whole) it bounds upload
	// memory: 64 MiB at the default.
	MaxConcurrentUploads int
	// MaxUploadsPerClient bounds the slots one client (token name, or IP
	// address for anonymous uploads) holds at once, so that a few clients
	// with slow uploads cannot take them all; its other uploads wait as
	// if every slot were taken. Default: a sixteenth of
	// MaxConcurrentUploads, at least 1.
	MaxUploadsPerClient int
	// UploadQueueWait bounds the wait for a slot; then the upload is
	// refused with 503 and Retry-After. Default 5 s.
	UploadQueueWait time.Duration
	// MinUploadRate, in bytes per second, and MinUploadRateWindow cut off
	// (408) a body that arrives slower than the rate for longer than the
	// window: the client is allowed to fall behind the rate by the bytes
	// of one window, and catches up by sending faster. Defaults 4 KiB/s
	// and 10 s; a negative MinUploadRate disables it.
	MinUploadRate       int
	MinUploadRateWindow time.Duration
	// ChunkSize is the size of the engine values an image is cut into.
	ChunkSize int
	// SpoolDir holds the temporary files of uploads larger than the
	// in-memory head; New creates it and removes the spool files a crash
	// left there, so it must belong to this host alone (the server uses
	// DIR/tmp). Empty means os.TempDir(), where nothing is cleaned.
	SpoolDir string
	// KeepGPS keeps EXIF GPS data in stored JPEG originals; by default it
	// is removed before hashing, so the stored bytes never locate the
	// photographer.
	KeepGPS bool
	// Anonymous says who may upload without a token.
	Anonymous Anonymous
	// Tokens are the upload credentials; they can be replaced while
	// running with Host.SetTokens.
	Tokens []Token
	// UploadRate and UploadBurst limit anonymous uploads per IP address
	// with a token bucket (per second, and the batch that passes at
	// once); TokenUploadRate and TokenUploadBurst limit each token the
	// same way. A negative rate disables its limit. A refused upload gets
	// 429 with the Retry-After its bucket needs to refill one upload.
	UploadRate       float64
	UploadBurst      int
	TokenUploadRate  float64
	TokenUploadBurst int
	// ReadIdleTimeout bounds the wait for each read of an upload body;
	// UploadTimeout bounds a whole upload. Slow clients get 408.
	ReadIdleTimeout time.Duration
	UploadTimeout   time.Duration
	// WriteIdleTimeout bounds the wait for each write of a response, so a
	// client that stops reading a download is cut off instead of holding
	// its connection and buffers forever; default 30 s.
	WriteIdleTimeout time.Duration
	// BlobStore is where the bytes of new originals and thumbnails go:
	// empty for the DB itself, or an S3-compatible bucket as
	// "s3://bucket/prefix?endpoint=URL&region=R", with the parameters
	// doc/imgbed.md lists (presigned redirects, thumbnails kept in the
	// DB or not, retries, part size). Metadata always stays in the DB, and
	// bytes stored before a change stay readable where they are.
	BlobStore string
	// S3AccessKey and S3SecretKey are the credentials of an s3:// blob
	// store. Empty: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, else the
	// shared AWS files (~/.aws/credentials, ~/.aws/config, AWS_PROFILE).
	S3AccessKey, S3SecretKey string
	// Reclaimer, when the DB's compaction filter was made with it
	// (NewCompactionFilter), brings the host the blobs in a remote store
	// whose images all expired, so that it deletes their objects. Nil:
	// such objects stay until the same bytes are uploaded again.
	Reclaimer *Reclaimer
	// ResumableMaxBytes bounds one resumable (tus) upload, announced as
	// Tus-Max-Size; default 1 GiB. Its image is checked like any other,
	// pixel limit included.
	ResumableMaxBytes int64
	// ResumablePerClient bounds the unfinished resumable uploads one
	// client (token, or IP address for anonymous uploads) may have open
	// at once, and ResumableBytesPerClient the sum of their declared
	// lengths (one upload is always allowed up to ResumableMaxBytes), so
	// that no client fills the disk with partial files. Over either, a
	// creation gets 429 with Retry-After (when the client's oldest open
	// upload expires if left alone). Defaults 8 and 4 GiB; negative:
	// unlimited.
	ResumablePerClient      int
	ResumableBytesPerClient int64
	// ResumableExpiry is how long an unfinished resumable upload is kept
	// after its last request (and a finished one's outcome after the
	// end); default 24 h. Its bytes live in SpoolDir/resumable, so
	// uploads resume across restarts only with a SpoolDir.
	ResumableExpiry time.Duration
	// FetchPrivate lets uploads by URL fetch from loopback, private,
	// link-local, multicast and other non-public addresses; by default
	// they are refused when dialled, after DNS and after redirects.
	FetchPrivate bool
	// FetchTimeout bounds the whole fetch of an upload by URL; default
	// 30 s. MaxBytes bounds its size.
	FetchTimeout time.Duration
	// CORSOrigins are the origins (such as "https://blog.example.com", or
	// "*" for any) whose scripts may call the API from a browser: their
	// requests get Access-Control-Allow-Origin and preflights are
	// answered. Empty: none, as browsers do by default. Tokens travel in
	// headers, never cookies, so no credentials mode is offered.
	CORSOrigins []string
	// RenderMaxSide bounds w and h of a rendered size (400 above it);
	// default 2048.
	RenderMaxSide int
	// RenderMemory bounds the memory of the renders running at once,
	// each counted at its estimated peak (decoded pixels, intermediate
	// images and output, from the original's header); a render waits
	// until its estimate fits, and one estimated above the whole budget
	// is refused with 422. Default 256 MiB.
	RenderMemory int64
	// HotBodyBytes bounds the bytes of small originals and thumbnails
	// (up to 128 KiB each) kept in memory for the GETs that read them
	// often; default 32 MiB, negative none.
	HotBodyBytes int64
	// RendersPerImage bounds the stored renders of one original with an
	// explicit box (?h= or ?fit=); ladder thumbnails (?w= alone) are not
	// counted. Default 32.
	RendersPerImage int
	// RenderSecret, when set, makes renders with h, fit or format in
	// their query need a signature (?sig=, HMAC-SHA256 of the path and
	// the rest of the query with this key, doc/imgbed.md), as imgproxy
	// does, so only links the site made can ask for new sizes. Ladder
	// thumbnails (?w= alone) stay open: there are only five.
	RenderSecret string
	// Registerer receives the host's Prometheus metrics; nil registers
	// nothing.
	Registerer prometheus.Registerer
	// WriteRefusal, when set, says why client writes (uploads, deletes,
	// albums, tokens) are refused now, or "": a read-only replica's
	// reason. Refused writes get 503 with that reason.
	WriteRefusal func() string
	// Follower, when set, reports whether the DB follows a primary, whose
	// batches are its only writes: the host then writes nothing of its
	// own. It skips the sweeps and migrations of New, serves renders
	// without storing them, and counts no views (the primary counts).
	Follower func() bool
}

// follows reports Config.Follower.
func (c *Config) follows() bool { return c.Follower != nil && c.Follower() }

func (c Config) withDefaults() Config {
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxPixels <= 0 {
		c.MaxPixels = DefaultMaxPixels
	}
	if c.MaxFilesPerRequest <= 0 {
		c.MaxFilesPerRequest = DefaultMaxFilesPerRequest
	}
	if c.MaxConcurrentUploads <= 0 {
		c.MaxConcurrentUploads = DefaultMaxConcurrentUploads
	}
	if c.MaxUploadsPerClient <= 0 {
		c.MaxUploadsPerClient = max(1, c.MaxConcurrentUploads/16)
	}
	if c.UploadQueueWait <= 0 {
		c.UploadQueueWait = DefaultUploadQueueWait
	}
	if c.MinUploadRate == 0 {
		c.MinUploadRate = DefaultMinUploadRate
	}
	if c.MinUploadRateWindow <= 0 {
		c.MinUploadRateWindow = DefaultMinUploadRateWindow
	}
	if c.ChunkSize <= 0 {
		c.ChunkSize = DefaultChunkSize
	}
	if c.ReadIdleTimeout <= 0 {
		c.ReadIdleTimeout = DefaultReadIdleTimeout
	}
	if c.WriteIdleTimeout <= 0 {
		c.WriteIdleTimeout = DefaultWriteIdleTimeout
	}
	if c.UploadTimeout <= 0 {
		c.UploadTimeout = DefaultUploadTimeout
	}
	if c.UploadRate == 0 {
		c.UploadRate = DefaultUploadRate
	}
	if c.UploadBurst <= 0 {
		c.UploadBurst = DefaultUploadBurst
	}
	if c.TokenUploadRate == 0 {
		c.TokenUploadRate = DefaultTokenUploadRate
	}
	if c.ResumableMaxBytes <= 0 {
		c.ResumableMaxBytes = DefaultResumableMaxBytes
	}
	if c.ResumablePerClient == 0 {
		c.ResumablePerClient = DefaultResumablePerClient
	}
	if c.ResumableBytesPerClient == 0 {
		c.ResumableBytesPerClient = DefaultResumableBytesPerClient
	}
	if c.ResumableExpiry <= 0 {
		c.ResumableExpiry = DefaultResumableExpiry
	}
	if c.FetchTimeout <= 0 {
		c.FetchTimeout = DefaultFetchTimeout
	}
	if c.TokenUploadBurst <= 0 {
		c.TokenUploadBurst = DefaultTokenUploadBurst
	}
	if c.RenderMaxSide <= 0 {
		c.RenderMaxSide = DefaultRenderMaxSide
	}
	if c.RenderMemory <= 0 {
		c.RenderMemory = DefaultRenderMemory
	}
	if c.RendersPerImage <= 0 {
		c.RendersPerImage = DefaultRendersPerImage
	}
	if c.HotBodyBytes == 0 {
		c.HotBodyBytes = DefaultHotBodyBytes
	}
	return c
}
