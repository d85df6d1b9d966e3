// Package s3test starts a real S3-compatible server for tests: SeaweedFS
// (`weed server -s3`), on loopback, with free ports, a temporary data
// directory and a random access key, stopped by its PID when the test
// ends.
//
// The weed binary is not built by the tests (building it takes about ten
// minutes of CPU): it is found at $LSMGO_WEED, or in the user cache
// directory as lsmgo-ci/weed-<commit>, where .ci/run builds it once and
// every later CI run reuses it. Without it a test skips with a message on
// a developer's machine, and fails when the environment variable CI is
// set, so a broken build never turns the S3 tests into silent skips.
//
// The harness signs its own few requests (AWS Signature Version 4) so that
// it depends on no S3 client library: the code under test brings its own.
package s3test

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/server/internal/testutil"
)

// Commit is the SeaweedFS commit the tests run against: its module
// version is github.com/seaweedfs/seaweedfs@v0.0.0-20261109003541-7506e5f91cd6.
const Commit = "7506e5f91cd6"

// Region is the region the server's clients sign for; SeaweedFS accepts
// any.
const Region = "us-east-1"

// startTimeout bounds the wait for a started server to accept a write.
// SeaweedFS starts a master, a volume server, a filer and the S3 gateway
// in one process; on a loaded two-core machine under -race that took up
// to 20 s, so the bound is generous: it only ends a hopeless wait.
const startTimeout = 2 * time.Minute

// Binary returns the path of the weed binary: $LSMGO_WEED, else
// <user cache dir>/lsmgo-ci/weed-<Commit>. It fails when that file does
// not exist.
func Binary() (string, error) {
	path := os.Getenv("LSMGO_WEED")
	if path == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("s3test: no user cache directory for the weed binary: %w", err)
		}
		path = filepath.Join(cache, "lsmgo-ci", "weed-"+Commit)
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("s3test: weed binary: %w (set LSMGO_WEED, or let .ci/run build it)", err)
	}
	return path, nil
}

// Server is one running SeaweedFS process.
type Server struct {
	// Endpoint is the S3 API's base URL, http://127.0.0.1:PORT.
	Endpoint string
	// AccessKey and SecretKey are the credentials the server accepts, with
	// every permission.
	AccessKey, SecretKey string

	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	log    string        // its standard output and error
	stop   sync.Once
}

// Require returns the weed binary. Without one it skips t, or fails t
// when $CI is set.
func Require(t testing.TB) string {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: under CI the S3 tests must run, not skip", err)
		}
		t.Skipf("%v: skipping the S3 test", err)
	}
	return bin
}

// Start starts a server for t and stops it when t ends, logging the end
// of its log if t failed. Without a weed binary it skips t, or fails t
// when $CI is set.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := Launch(Require(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("weed log (last 4 KiB):\n%s", s.LogTail(4096))
		}
	})
	return s
}

// Launch starts the weed binary bin with its files under dir and waits
// until it is ready; the caller must Stop it. Tests that share one server
// among many tests use it; the others use Start.
func Launch(bin, dir string) (*Server, error) {
	// A free port found by listening and closing may be taken again
	// before weed binds it; a start that dies early is retried on new
	// ports, in a new directory.
	var last error
	for i := range 3 {
		sub := filepath.Join(dir, fmt.Sprintf("weed%d", i))
		if err := os.Mkdir(sub, 0o700); err != nil {
			return nil, err
		}
		s, err := launch(bin, sub)
		if err == nil {
			return s, nil
		}
		last = err
		if !errors.Is(err, errExited) {
			break
		}
	}
	return nil, last
}

var errExited = errors.New("s3test: weed exited before it was ready")

func launch(bin, dir string) (*Server, error) {
	ports, err := freePorts(8)
	if err != nil {
		return nil, err
	}
	s := &Server{
		Endpoint:  fmt.Sprintf("http://127.0.0.1:%d", ports[6]),
		AccessKey: "LSMGO" + randomHex(8),
		SecretKey: randomHex(20),
		exited:    make(chan struct{}),
		log:       filepath.Join(dir, "weed.log"),
	}
	config := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(config, s.identities(), 0o600); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return nil, err
	}
	logf, err := os.Create(s.log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	s.cmd = exec.Command(bin, "-logtostderr", "server",
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir="+data,
		"-master.port="+p(0), "-master.port.grpc="+p(1), "-master.telemetry=false",
		"-master.volumeSizeLimitMB=64", "-volume.max=0",
		"-volume.port="+p(2), "-volume.port.grpc="+p(3),
		"-filer", "-filer.port="+p(4), "-filer.port.grpc="+p(5),
		"-filer.localSocket="+filepath.Join(dir, "filer.sock"),
		"-s3", "-s3.port="+p(6), "-s3.port.grpc="+p(7), "-s3.config="+config,
		"-s3.port.iceberg=0", "-s3.port.lance=0",
		"-s3.localSocket="+filepath.Join(dir, "s3.sock"))
	s.cmd.Dir = dir
	s.cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("s3test: starting %s: %w", bin, err)
	}
	go func() {
		s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(); err != nil {
		s.Stop()
		return nil, fmt.Errorf("%w\nweed log (last 4 KiB):\n%s", err, s.LogTail(4096))
	}
	return s, nil
}

// identities is the -s3.config file: one identity with every action.
func (s *Server) identities() []byte {
	type cred struct {
		AccessKey string `json:"accessKey"`
		SecretKey string `json:"secretKey"`
	}
	type identity struct {
		Name        string   `json:"name"`
		Credentials []cred   `json:"credentials"`
		Actions     []string `json:"actions"`
	}
	b, _ := json.Marshal(map[string][]identity{"identities": {{
		Name:        "lsmgo-test",
		Credentials: []cred{{s.AccessKey, s.SecretKey}},
		Actions:     []string{"Admin", "Read", "List", "Tagging", "Write"},
	}}})
	return b
}

// waitReady waits until the server stores an object: the gateway answers,
// the filer is up and the master has a writable volume.
func (s *Server) waitReady() error {
	const bucket = "lsmgo-s3test-ready"
	deadline := time.Now().Add(startTimeout)
	var last error
	for step := 0; ; step++ {
		select {
		case <-s.exited:
			return fmt.Errorf("%w: %v", errExited, s.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("s3test: weed not ready after %v: %v", startTimeout, last)
		}
		if last = s.CreateBucket(bucket); last == nil {
			if last = s.expect("PUT", "/"+bucket+"/probe", []byte("ready"), http.StatusOK); last == nil {
				return s.expect("DELETE", "/"+bucket+"/probe", nil, http.StatusNoContent)
			}
		}
		time.Sleep(min(time.Duration(step+1)*50*time.Millisecond, 500*time.Millisecond))
	}
}

// CreateBucket creates a bucket; one that exists already is no error.
func (s *Server) CreateBucket(name string) error {
	resp, err := s.Do("PUT", "/"+name, nil)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK || bytes.Contains(body, []byte("BucketAlreadyOwnedByYou")) {
		return nil
	}
	return fmt.Errorf("s3test: create bucket %s: %s: %s", name, resp.Status, body)
}

func (s *Server) expect(method, path string, body []byte, status int) error {
	resp, err := s.Do(method, path, body)
	if err != nil {
		return err
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != status {
		return fmt.Errorf("s3test: %s %s: %s: %s", method, path, resp.Status, got)
	}
	return nil
}

// Do sends one signed request. path is "/bucket" or "/bucket/key", with
// nothing in it that needs escaping, and may end in a query such as
// "?list-type=2&prefix=p".
func (s *Server) Do(method, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequest(method, s.Endpoint+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	s.sign(req, body, time.Now().UTC())
	client := &http.Client{Timeout: 10 * time.Second}
	return client.Do(req)
}

// sign adds AWS Signature Version 4 headers to req (not presigned).
func (s *Server) sign(req *http.Request, body []byte, now time.Time) {
	date, stamp := now.Format("20060102"), now.Format("20060102T150405Z")
	payload := sha256.Sum256(body)
	req.Header.Set("X-Amz-Date", stamp)
	req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(payload[:]))
	const signed = "host;x-amz-content-sha256;x-amz-date"
	canonical := strings.Join([]string{
		req.Method, req.URL.EscapedPath(), strings.ReplaceAll(req.URL.Query().Encode(), "+", "%20"),
		"host:" + req.URL.Host + "\nx-amz-content-sha256:" + hex.EncodeToString(payload[:]) + "\nx-amz-date:" + stamp + "\n",
		signed, hex.EncodeToString(payload[:]),
	}, "\n")
	scope := date + "/" + Region + "/s3/aws4_request"
	hashed := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + stamp + "\n" + scope + "\n" + hex.EncodeToString(hashed[:])
	key := []byte("AWS4" + s.SecretKey)
	for _, part := range []string{date, Region, "s3", "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+s.AccessKey+"/"+scope+
		", SignedHeaders="+signed+", Signature="+hex.EncodeToString(hmacSHA256(key, toSign)))
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// Stop kills the server (SIGKILL, by its PID) and waits for it to exit:
// to a client, S3 is then down. It is safe to call more than once.
func (s *Server) Stop() {
	s.stop.Do(func() {
		s.cmd.Process.Kill()
		<-s.exited
	})
}

// LogTail returns the last n bytes of the server's log.
func (s *Server) LogTail(n int64) string {
	f, err := os.Open(s.log)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// freePorts returns n distinct loopback ports that were free a moment
// ago, below the ephemeral range (testutil.FreePortErr): weed's parts
// connect to each other while it still binds its ports one after
// another, and such a connection's local port, from the ephemeral range,
// could be one weed has yet to bind.
func freePorts(n int) ([]int, error) {
	var ports []int
	seen := map[int]bool{}
	for len(ports) < n {
		p, err := testutil.FreePortErr()
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	return ports, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return strings.ToUpper(hex.EncodeToString(b))[:n]
}
