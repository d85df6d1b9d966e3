// Package s3bucket reads the s3:// URLs that name a place in an
// S3-compatible bucket (s3://bucket[/prefix][?endpoint=URL&region=R&…])
// and connects a minio-go client to it. The image host's blob store and
// the backup sets both use it, so the two accept the same common
// parameters and reach the store the same way; each adds its own
// parameters (Parse's extra).
package s3bucket

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Defaults of the common parameters.
const (
	DefaultEndpoint = "s3.amazonaws.com"
	DefaultRegion   = "us-east-1"
)

// Location is what an s3:// URL names.
type Location struct {
	Bucket string
	Prefix string // "" or ending in "/": the objects' key prefix
	// Endpoint is host[:port] of the S3 API; Secure says whether it is
	// reached over HTTPS.
	Endpoint string
	Secure   bool
	Region   string
}

// Parse reads raw, of the form s3://bucket[/prefix][?endpoint=URL
// &region=R]. endpoint is an http:// or https:// URL without a path, or a
// bare host[:port] reached over HTTPS (default DefaultEndpoint); region
// defaults to DefaultRegion. A parameter other than those two is handed
// to extra[name], which stores its value and reports whether it is
// valid; a name in neither is refused. Where a parameter is repeated, the
// last value counts.
func Parse(raw string, extra map[string]func(value string) bool) (Location, error) {
	l := Location{Endpoint: DefaultEndpoint, Secure: true, Region: DefaultRegion}
	u, err := url.Parse(raw)
	if err != nil {
		return l, err
	}
	if u.Scheme != "s3" || u.Host == "" || u.User != nil || u.Fragment != "" {
		return l, fmt.Errorf("%q is not of the form s3://bucket/prefix?endpoint=URL", raw)
	}
	l.Bucket = u.Host
	if p := strings.Trim(u.Path, "/"); p != "" {
		l.Prefix = p + "/"
	}
	for name, vs := range u.Query() {
		v := vs[len(vs)-1]
		ok := true
		switch name {
		case "endpoint":
			ok = l.setEndpoint(v)
		case "region":
			l.Region, ok = v, v != ""
		default:
			set, known := extra[name]
			if !known {
				return l, fmt.Errorf("%q: unknown parameter %q", raw, name)
			}
			ok = set(v)
		}
		if !ok {
			return l, fmt.Errorf("%q: bad %s %q", raw, name, v)
		}
	}
	return l, nil
}

// setEndpoint sets the endpoint from an endpoint parameter v, and reports
// whether v is one.
func (l *Location) setEndpoint(v string) bool {
	if !strings.Contains(v, "://") {
		v = "https://" + v
	}
	e, err := url.Parse(v)
	if err != nil || e.Host == "" || (e.Scheme != "http" && e.Scheme != "https") || strings.Trim(e.Path, "/") != "" {
		return false
	}
	l.Endpoint, l.Secure = e.Host, e.Scheme == "https"
	return true
}

// Credentials are the keys the store is reached with. Empty keys fall
// back to AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, then to the shared
// AWS files (~/.aws/credentials and ~/.aws/config, profile AWS_PROFILE or
// default).
type Credentials struct {
	AccessKey, SecretKey string
}

// Client returns a client of l's endpoint. It connects to nothing yet:
// the first request does. maxRetries bounds the attempts of a request (0:
// minio-go's default); minio-go retries with exponential backoff and
// jitter.
func (l Location) Client(creds Credentials, maxRetries int) (*minio.Client, error) {
	var providers []credentials.Provider
	if creds.AccessKey != "" || creds.SecretKey != "" {
		providers = append(providers, &credentials.Static{Value: credentials.Value{
			AccessKeyID: creds.AccessKey, SecretAccessKey: creds.SecretKey, SignerType: credentials.SignatureV4}})
	}
	providers = append(providers, &credentials.EnvAWS{}, &credentials.FileAWSCredentials{})
	lookup := minio.BucketLookupAuto
	if l.Endpoint != DefaultEndpoint {
		// Self-hosted stores (SeaweedFS, MinIO, Ceph) rarely have the
		// wildcard DNS that virtual-host-style bucket names need.
		lookup = minio.BucketLookupPath
	}
	return minio.New(l.Endpoint, &minio.Options{
		Creds:  credentials.NewChainCredentials(providers),
		Secure: l.Secure,
		// Known, so no bucket-location request is sent, and presigning
		// works offline.
		Region:       l.Region,
		BucketLookup: lookup,
		MaxRetries:   maxRetries,
	})
}
