package imgbed

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/lsmgo-dev/lsmgo/server/internal/s3test"
)

// backend is a blob store that the store-generic tests (round trip,
// dedup, delete, refusals, thumbnails, sweep) run against: the DB itself,
// and S3 through a real SeaweedFS on loopback.
type backend struct {
	name string
	// apply sets the fields of cfg that put blobs in this store, for one
	// test.
	apply func(t testing.TB, cfg *Config)
}

var backends = []backend{
	{"db", func(testing.TB, *Config) {}},
	{"s3", func(t testing.TB, cfg *Config) { s3Bucket(t, cfg, "") }},
}

// eachBackend runs body as one subtest per backend.
func eachBackend(t *testing.T, body func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { body(t, b) })
	}
}

// host starts a test host whose blobs go to b.
func (b backend) host(t testing.TB, cfg Config) *testHost {
	t.Helper()
	b.apply(t, &cfg)
	return newTestHost(t, cfg)
}

// sharedS3 is one SeaweedFS for the whole package run, started by the
// first test that needs it (a start costs seconds of CPU) and stopped by
// TestMain; each test gets a prefix of its own in one bucket (SeaweedFS
// makes each bucket a collection with volumes of its own, so buckets are
// not free). Tests that stop S3 start their own with s3test.Start.
var sharedS3 struct {
	once sync.Once
	srv  *s3test.Server
	dir  string
	err  error
}

var prefixes atomic.Int64

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedS3.srv != nil {
		sharedS3.srv.Stop()
	}
	if sharedS3.dir != "" {
		os.RemoveAll(sharedS3.dir)
	}
	os.Exit(code)
}

// s3Bucket points cfg at a new prefix of a bucket of srv (the shared
// server when nil), with query added to the store URL.
func s3Bucket(t testing.TB, cfg *Config, query string, srv ...*s3test.Server) {
	t.Helper()
	var s *s3test.Server
	if len(srv) > 0 {
		s = srv[0]
	} else {
		bin := s3test.Require(t)
		sharedS3.once.Do(func() {
			if sharedS3.dir, sharedS3.err = os.MkdirTemp("", "imgbed-s3-"); sharedS3.err == nil {
				sharedS3.srv, sharedS3.err = s3test.Launch(bin, sharedS3.dir)
			}
		})
		if sharedS3.err != nil {
			t.Fatal(sharedS3.err)
		}
		s = sharedS3.srv
	}
	if err := s.CreateBucket("imgbed"); err != nil {
		t.Fatal(err)
	}
	// Two retries: a test of S3 being down should not wait out five.
	cfg.BlobStore = fmt.Sprintf("s3://imgbed/t%d?endpoint=%s&retries=2%s", prefixes.Add(1), s.Endpoint, query)
	cfg.S3AccessKey, cfg.S3SecretKey = s.AccessKey, s.SecretKey
}

// objects counts the objects under a host's S3 store's prefix.
func (th *testHost) objects(t testing.TB) int {
	t.Helper()
	b, ok := th.st.remote.(*s3Blobs)
	if !ok {
		return 0
	}
	n := 0
	for obj := range b.client.Client.ListObjects(context.Background(), b.bucket, minio.ListObjectsOptions{Prefix: b.prefix, Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		n++
	}
	return n
}

// stored counts what holds image bytes: chunks in the DB and objects in
// S3.
func (th *testHost) stored(t testing.TB) int {
	return th.countKeys(t).chunks + th.objects(t)
}
