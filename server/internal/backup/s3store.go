package backup

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
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

// S3Credentials are the keys an s3:// backup set is reached with. Empty
// keys fall back to AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, then to
// the shared AWS files (~/.aws/credentials, profile AWS_PROFILE or
// default).
type S3Credentials struct {
	AccessKey, SecretKey string
}

// newS3Store reads s3://bucket[/prefix][?endpoint=URL&region=R]; the
// endpoint defaults to AWS (https://s3.amazonaws.com) and the region to
// us-east-1.
func newS3Store(raw string, creds S3Credentials) (Store, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("backup: %q: %w", raw, err)
	}
	if u.Scheme != "s3" || u.Host == "" || u.User != nil || u.Fragment != "" {
		return nil, fmt.Errorf("backup: %q is not of the form s3://bucket/prefix?endpoint=URL", raw)
	}
	endpoint, secure, region := "s3.amazonaws.com", true, "us-east-1"
	for name, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch name {
		case "endpoint":
			if !strings.Contains(v, "://") {
				v = "https://" + v
			}
			e, err := url.Parse(v)
			if err != nil || e.Host == "" || (e.Scheme != "http" && e.Scheme != "https") || strings.Trim(e.Path, "/") != "" {
				return nil, fmt.Errorf("backup: %q: bad endpoint %q", raw, vs[len(vs)-1])
			}
			endpoint, secure = e.Host, e.Scheme == "https"
		case "region":
			region = v
		default:
			return nil, fmt.Errorf("backup: %q: unknown parameter %q", raw, name)
		}
	}
	var providers []credentials.Provider
	if creds.AccessKey != "" || creds.SecretKey != "" {
		providers = append(providers, &credentials.Static{Value: credentials.Value{
			AccessKeyID: creds.AccessKey, SecretAccessKey: creds.SecretKey, SignerType: credentials.SignatureV4}})
	}
	providers = append(providers, &credentials.EnvAWS{}, &credentials.FileAWSCredentials{})
	lookup := minio.BucketLookupAuto
	if endpoint != "s3.amazonaws.com" {
		// Self-hosted stores rarely have the wildcard DNS that
		// virtual-host-style bucket names need.
		lookup = minio.BucketLookupPath
	}
	c, err := minio.New(endpoint, &minio.Options{
		Creds:        credentials.NewChainCredentials(providers),
		Secure:       secure,
		Region:       region,
		BucketLookup: lookup,
	})
	if err != nil {
		return nil, fmt.Errorf("backup: %q: %w", raw, err)
	}
	s := &s3Store{client: c, bucket: u.Host}
	if p := strings.Trim(u.Path, "/"); p != "" {
		s.prefix = p + "/"
	}
	return s, nil
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
