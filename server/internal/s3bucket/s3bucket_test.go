package s3bucket

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestParse reads the URLs the docs show, with the defaults filled in,
// and refuses malformed ones saying what is wrong.
func TestParse(t *testing.T) {
	for raw, want := range map[string]Location{
		"s3://b":      {Bucket: "b", Endpoint: DefaultEndpoint, Secure: true, Region: DefaultRegion},
		"s3://b/p/q/": {Bucket: "b", Prefix: "p/q/", Endpoint: DefaultEndpoint, Secure: true, Region: DefaultRegion},
		"s3://b/p?endpoint=http://127.0.0.1:8333&region=eu-west-3": {
			Bucket: "b", Prefix: "p/", Endpoint: "127.0.0.1:8333", Region: "eu-west-3"},
		"s3://b?endpoint=minio.example.com:9000": {
			Bucket: "b", Endpoint: "minio.example.com:9000", Secure: true, Region: DefaultRegion},
		"s3://b?region=r1&region=r2": {Bucket: "b", Endpoint: DefaultEndpoint, Secure: true, Region: "r2"},
	} {
		if got, err := Parse(raw, nil); err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", raw, got, err, want)
		}
	}
	for raw, want := range map[string]string{
		"":                              "is not of the form",
		"b":                             "is not of the form",
		"http://b":                      "is not of the form",
		"s3://":                         "is not of the form",
		"s3:///p":                       "is not of the form",
		"s3://user:pw@b":                "is not of the form",
		"s3://b#frag":                   "is not of the form",
		"s3://b?nope=1":                 `unknown parameter "nope"`,
		"s3://b?endpoint=ftp://h":       `bad endpoint "ftp://h"`,
		"s3://b?endpoint=http://h/path": "bad endpoint",
		"s3://b?endpoint=http://":       "bad endpoint",
		"s3://b?endpoint=":              "bad endpoint",
		"s3://b?region=":                "bad region",
		"s3://b%zz":                     "invalid URL escape",
	} {
		if _, err := Parse(raw, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): error %v; want %q", raw, err, want)
		}
	}
}

// TestParseExtra hands the parameters a user adds to its setters, and
// refuses a value a setter rejects.
func TestParseExtra(t *testing.T) {
	var colour string
	extra := map[string]func(string) bool{"colour": func(v string) bool {
		colour = v
		return v == "red" || v == "blue"
	}}
	l, err := Parse("s3://b?colour=red&colour=blue&region=x", extra)
	if err != nil || colour != "blue" || l.Region != "x" {
		t.Fatalf("Parse = %+v, %v, colour %q", l, err, colour)
	}
	if _, err := Parse("s3://b?colour=green", extra); err == nil || !strings.Contains(err.Error(), `bad colour "green"`) {
		t.Fatalf("a bad extra value: %v", err)
	}
	if _, err := Parse("s3://b?size=1", extra); err == nil || !strings.Contains(err.Error(), "unknown parameter") {
		t.Fatalf("a parameter in neither set: %v", err)
	}
}

// TestClient builds clients without a server: a presigned URL, computed
// locally, shows the endpoint, the scheme, and the bucket in the path for
// a self-hosted store (no wildcard DNS) but in the host name for AWS.
func TestClient(t *testing.T) {
	ctx := context.Background()
	creds := Credentials{AccessKey: "a", SecretKey: "s"}
	for raw, want := range map[string]string{
		"s3://bkt/p?endpoint=http://127.0.0.1:8333": "http://127.0.0.1:8333/bkt/p/obj",
		// minio-go picks AWS's dual-stack host name.
		"s3://bkt/p": "https://bkt.s3.dualstack.us-east-1.amazonaws.com/p/obj",
	} {
		l, err := Parse(raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := l.Client(creds, 3)
		if err != nil {
			t.Fatal(err)
		}
		u, err := c.PresignedGetObject(ctx, l.Bucket, l.Prefix+"obj", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := u.Scheme + "://" + u.Host + u.Path; got != want || !strings.Contains(u.RawQuery, DefaultRegion) {
			t.Errorf("%s: presigned %s; want %s signed for %s", raw, u, want, DefaultRegion)
		}
	}
}
