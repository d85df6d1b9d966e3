package backup

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/lsmgo-dev/lsmgo/server/internal/s3bucket"
)

// s3Store is a backup set under a prefix of an S3 bucket (AWS, or any
// S3-compatible store: SeaweedFS, MinIO, Ceph). minio-go, the client the
// image host uses too, signs the requests, retries failed ones with
// backoff and uploads large files in parts.
type s3Store struct {
	client *minio.Client
	bucket string
	prefix string // "" or ending in "/"
}

// S3Credentials are the keys an s3:// backup set is reached with; empty
// ones fall back as s3bucket.Credentials says.
type S3Credentials = s3bucket.Credentials

// newS3Store reads s3://bucket[/prefix][?endpoint=URL&region=R]
// (s3bucket.Parse): a backup set takes no other parameter.
func newS3Store(raw string, creds S3Credentials) (Store, error) {
	l, err := s3bucket.Parse(raw, nil)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	c, err := l.Client(creds, 0)
	if err != nil {
		return nil, fmt.Errorf("backup: %q: %w", raw, err)
	}
	return &s3Store{client: c, bucket: l.Bucket, prefix: l.Prefix}, nil
}

// notExist maps S3's "no such key" to fs.ErrNotExist.
func notExist(err error) error {
	if code := minio.ToErrorResponse(err).Code; code == minio.NoSuchKey || code == "NotFound" {
		return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	return err
}

func (s *s3Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	_, err := s.client.PutObject(ctx, s.bucket, s.prefix+key, r, size,
		minio.PutObjectOptions{ContentType: "application/octet-stream"})
	return err
}

func (s *s3Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	obj, err := s.client.GetObject(ctx, s.bucket, s.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, notExist(err)
	}
	// GetObject sends nothing until the first read; Stat does, so a
	// missing object is reported here, as the other stores do.
	if _, err := obj.Stat(); err != nil {
		obj.Close()
		return nil, notExist(err)
	}
	return obj, nil
}

func (s *s3Store) Size(ctx context.Context, key string) (int64, error) {
	info, err := s.client.StatObject(ctx, s.bucket, s.prefix+key, minio.StatObjectOptions{})
	if err != nil {
		return 0, notExist(err)
	}
	return info.Size, nil
}

func (s *s3Store) List(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true}) {
		if obj.Err != nil {
			return nil, obj.Err
		}
		keys = append(keys, strings.TrimPrefix(obj.Key, s.prefix))
	}
	return keys, nil
}

func (s *s3Store) Delete(ctx context.Context, key string) error {
	return s.client.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{})
}
