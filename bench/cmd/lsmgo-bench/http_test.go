package main

import (
	"context"
	"image"
	"image/jpeg"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestHTTPModeAgainstReference runs the http-reference mode in this
// process and loads it with the http mode, as the image host benchmark
// script does.
func TestHTTPModeAgainstReference(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	out := lineWriter{lines: make(chan string, 4)}
	exit := make(chan int, 1)
	go func() { exit <- serveReference(ctx, []string{"--addr=127.0.0.1:0", "--dir=" + dir}, out, t.Output()) }()
	defer func() {
		cancel()
		if code := <-exit; code != 0 {
			t.Errorf("http-reference exited %d", code)
		}
	}()
	var addr string
	select {
	case line := <-out.lines:
		m := regexp.MustCompile(`listening http=(\S+) dir=`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("http-reference said %q", line)
		}
		addr = m[1]
	case <-time.After(10 * time.Second):
		t.Fatal("http-reference did not start")
	}

	f, _ := os.Create(filepath.Join(dir, "in.jpeg"))
	jpeg.Encode(f, image.NewGray(image.Rect(0, 0, 16, 16)), nil)
	f.Close()
	var stdout, stderr strings.Builder
	code := runMain([]string{"--mode=http", "--target=http://" + addr, "--file=" + f.Name(), "--requests=10", "--images=2",
		"--connections=2", "--workloads=upload,get", "--progress=off", "--name=reference"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("http mode exited %d: %s", code, stderr.String())
	}
	for _, w := range []string{"upload ", "get "} {
		if !regexp.MustCompile(`(?m)^` + w + `\s+reference\s+2\s`).MatchString(stdout.String()) {
			t.Errorf("no %s row:\n%s", w, stdout.String())
		}
	}
}

func TestHTTPModesRefuseOtherHosts(t *testing.T) {
	var stderr strings.Builder
	if code := runMain([]string{"--mode=http-reference", "--addr=0.0.0.0:0"}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "loopback only") {
		t.Errorf("http-reference on every interface: exit %d, %q", code, stderr.String())
	}
	stderr.Reset()
	if code := runMain([]string{"--mode=http", "--target=http://192.0.2.1:8080", "--file=x.jpg"}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "only loopback hosts") {
		t.Errorf("http against another host: exit %d, %q", code, stderr.String())
	}
}
