package imgbed

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/lsmgo-dev/lsmgo/server/internal/s3bucket"
)

// s3Blobs keeps blobs as objects of an S3-compatible bucket, one object
// per generation: <prefix>/<sha256 hex>/<generation hex>. The name is
// derived from the hash, so an operator can tell what an object is, and
// carries the generation, so deleting the bytes of a blob never races with
// a new upload of the same bytes (see blobStore).
//
// minio-go does the protocol work: SigV4 signing, streaming multipart
// uploads (parts read from the spooled upload at their offsets, none
// buffered), retries with exponential backoff and jitter, and presigning.
type s3Blobs struct {
	client  *minio.Core
	bucket  string
	prefix  string        // "" or ending in "/"
	presign time.Duration // > 0: redirect GETs to presigned URLs
	// partSize is the size of the parts of a multipart upload; an object
	// of at most one part is sent in one PUT.
	partSize uint64
}

// Defaults of the parameters an s3:// blob store URL adds to those of
// every s3:// URL (doc/imgbed.md).
const (
	defaultS3Retries  = 5
	defaultS3PartSize = 8 << 20 // S3's smallest part is 5 MiB
	minS3PartSize     = 5 << 20
)

// s3Options is what an s3:// URL says, beside the credentials.
type s3Options struct {
	s3bucket.Location
	retries          int
	partSize         uint64
	presign          time.Duration
	remoteThumbnails bool
}

// parseS3URL reads s3://bucket[/prefix][?endpoint=URL&region=R&presign=D
// &thumbnails=db|s3&retries=N&part-size=BYTES].
func parseS3URL(raw string) (s3Options, error) {
	o := s3Options{retries: defaultS3Retries, partSize: defaultS3PartSize}
	var err error
	o.Location, err = s3bucket.Parse(raw, map[string]func(string) bool{
		"presign": func(v string) bool {
			d, err := time.ParseDuration(v)
			o.presign = d
			// S3 refuses presigned URLs valid longer than a week.
			return err == nil && d >= time.Second && d <= 7*24*time.Hour
		},
		"thumbnails": func(v string) bool {
			o.remoteThumbnails = v == "s3"
			return v == "db" || v == "s3"
		},
		"retries": func(v string) bool {
			n, err := strconv.Atoi(v)
			o.retries = n
			return err == nil && n >= 1 && n <= 100
		},
		"part-size": func(v string) bool {
			n, err := strconv.ParseUint(v, 10, 64)
			o.partSize = n
			return err == nil && n >= minS3PartSize && n <= 5<<30
		},
	})
	if err != nil {
		return o, fmt.Errorf("imgbed: blob store: %w", err)
	}
	return o, nil
}

// CheckBlobStore reports whether u is a valid Config.BlobStore.
func CheckBlobStore(u string) error {
	if u == "" {
		return nil
	}
	_, err := parseS3URL(u)
	return err
}

// newS3Blobs connects to nothing yet: the first request does. Credentials
// are accessKey and secretKey when given, else those s3bucket.Credentials
// falls back to.
func newS3Blobs(o s3Options, accessKey, secretKey string) (*s3Blobs, error) {
	c, err := o.Client(s3bucket.Credentials{AccessKey: accessKey, SecretKey: secretKey}, o.retries)
	if err != nil {
		return nil, fmt.Errorf("imgbed: S3 client: %w", err)
	}
	return &s3Blobs{client: &minio.Core{Client: c}, bucket: o.Bucket, prefix: o.Prefix, presign: o.presign, partSize: o.partSize}, nil
}

func (*s3Blobs) kind() string { return "s3" }

func (b *s3Blobs) object(s sum, g gen) string {
	return b.prefix + s.String() + "/" + string(hexText(g[:]))
}

func (b *s3Blobs) put(ctx context.Context, s sum, g gen, r io.Reader, size int64, mime string) error {
	_, err := b.client.Client.PutObject(ctx, b.bucket, b.object(s, g), r, size, minio.PutObjectOptions{
		ContentType:  mime,
		CacheControl: immutable,
		PartSize:     b.partSize,
		// Parts are read at their offsets from the spool (an
		// io.ReaderAt), two at a time: memory stays a few buffers
		// whatever the size.
		NumThreads: 2,
	})
	return err
}

func (b *s3Blobs) open(ctx context.Context, s sum, m *blobMeta) (io.ReadSeekCloser, error) {
	r := &s3Reader{ctx: ctx, b: b, object: b.object(s, m.Gen), size: m.Size}
	return r, nil
}

func (b *s3Blobs) remove(ctx context.Context, s sum, g gen) error {
	err := b.client.Client.RemoveObject(ctx, b.bucket, b.object(s, g), minio.RemoveObjectOptions{})
	if notFound(err) {
		return nil
	}
	return err
}

func (b *s3Blobs) stat(ctx context.Context, s sum, g gen) (int64, error) {
	info, err := b.client.Client.StatObject(ctx, b.bucket, b.object(s, g), minio.StatObjectOptions{})
	if notFound(err) {
		return 0, errNotFound
	}
	return info.Size, err
}

// presignGet returns a URL that downloads the object of s, g for
// b.presign, labelled with mime and cached like every image link.
// Presigning is computed locally: it works while the store is down.
func (b *s3Blobs) presignGet(ctx context.Context, s sum, g gen, mime string) (*url.URL, error) {
	params := url.Values{"response-content-type": {mime}, "response-cache-control": {immutable}}
	return b.client.Client.PresignedGetObject(ctx, b.bucket, b.object(s, g), b.presign, params)
}

func notFound(err error) bool {
	code := minio.ToErrorResponse(err).Code
	return code == minio.NoSuchKey || code == "NotFound"
}

// s3Reader reads an object from its current offset: a seek costs nothing,
// and the first read after one starts a ranged GET there, so
// http.ServeContent's Range requests and HEADs fetch only what they send.
type s3Reader struct {
	ctx    context.Context
	b      *s3Blobs
	object string
	size   int64
	off    int64
	body   io.ReadCloser // nil: no request open at off
}

func (r *s3Reader) Read(p []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	if r.body == nil {
		var opts minio.GetObjectOptions
		if r.off > 0 {
			opts.SetRange(r.off, 0)
		}
		body, _, _, err := r.b.client.GetObject(r.ctx, r.b.bucket, r.object, opts)
		if notFound(err) {
			return 0, errNotFound
		}
		if err != nil {
			return 0, unavailable(err)
		}
		r.body = body
	}
	n, err := r.body.Read(p)
	r.off += int64(n)
	if err == io.EOF && r.off < r.size {
		err = io.ErrUnexpectedEOF
	}
	if err != nil && err != io.EOF {
		err = unavailable(err)
	}
	return n, err
}

func (r *s3Reader) Seek(offset int64, whence int) (int64, error) {
	old := r.off
	n, err := seek(&r.off, r.size, offset, whence)
	if r.off != old && r.body != nil {
		r.body.Close()
		r.body = nil
	}
	return n, err
}

func (r *s3Reader) Close() error {
	if r.body == nil {
		return nil
	}
	err := r.body.Close()
	r.body = nil
	return err
}
