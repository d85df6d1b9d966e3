package backup

import (
	"strings"
	"testing"
)

// TestS3URL checks what an s3:// backup set URL may say; no request is
// sent.
func TestS3URL(t *testing.T) {
	for raw, want := range map[string]string{
		"s3://b": "",
		"s3://b/p/q?endpoint=http://127.0.0.1:8333":  "",
		"s3://b?endpoint=s3.example.com&region=eu-1": "",
		"s3:///p":                       "is not of the form",
		"s3://user@b/p":                 "is not of the form",
		"s3://b?nope=1":                 "unknown parameter",
		"s3://b?endpoint=ftp://h":       "bad endpoint",
		"s3://b?endpoint=http://h/path": "bad endpoint",
		"s3://b?endpoint=http://":       "bad endpoint",
		"s3://b#frag":                   "is not of the form",
	} {
		st, err := OpenStore(raw, S3Credentials{AccessKey: "a", SecretKey: "s"})
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", raw, err)
		case want == "" && st.(*s3Store).bucket != "b":
			t.Errorf("%s: bucket %q", raw, st.(*s3Store).bucket)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: error %v; want %q", raw, err, want)
		}
	}
	st, _ := OpenStore("s3://b/p/q/", S3Credentials{})
	if p := st.(*s3Store).prefix; p != "p/q/" {
		t.Errorf("prefix %q; want p/q/", p)
	}
	if st, err := OpenStore("/var/backups/x", S3Credentials{}); err != nil {
		t.Error(err)
	} else if _, ok := st.(*dirStore); !ok {
		t.Error("a path is not a directory set")
	}
}
