package imgbed

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// TestKill9 kills a process in the middle of uploads, duplicates and
// deletes, then reopens its directory: every acknowledged upload is there
// with its bytes, every acknowledged delete is gone, and Check finds no
// half image or stray chunk.
func TestKill9(t *testing.T) {
	dir := t.TempDir()
	cmd, out := startKillChild(t, "TestKill9Child", dir)
	acked := make(map[string]string) // id -> sha256
	deleted := make(map[string]bool)
	// A delete the kill interrupted may have committed or not: its image
	// may be there or not, but if it is, it is whole.
	deleting := make(map[string]bool)
	lines := bufio.NewScanner(out)
	read := func() bool {
		if !lines.Scan() {
			return false
		}
		f := strings.Fields(lines.Text())
		switch {
		case len(f) == 3 && f[0] == "ACK":
			acked[f[1]] = f[2]
		case len(f) == 2 && f[0] == "DELETING":
			deleting[f[1]] = true
		case len(f) == 2 && f[0] == "DEL":
			deleted[f[1]] = true
		}
		return true
	}
	deadline := time.Now().Add(3 * time.Second)
	for read() && (len(acked) < 40 || time.Now().Before(deadline)) {
	}
	cmd.Process.Kill() // SIGKILL
	// What the child said before it died counts too: a delete it
	// acknowledged after the last line read above is done.
	for read() {
	}
	cmd.Wait()
	if len(acked) == 0 {
		t.Fatal("the child acknowledged nothing")
	}
	db, err := lsmgo.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h, err := New(db, Config{ChunkSize: killChunk})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Check(); err != nil {
		t.Fatalf("after kill -9: %v", err)
	}
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	for id, sha := range acked {
		resp, err := http.Get(srv.URL + "/i/" + id + ".png")
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		body.ReadFrom(resp.Body)
		resp.Body.Close()
		switch {
		case deleted[id] && resp.StatusCode != 404:
			t.Errorf("deleted %s is back: %d", id, resp.StatusCode)
		case !deleted[id] && deleting[id] && resp.StatusCode == 404:
		case !deleted[id] && (resp.StatusCode != 200 || sumHex(body.Bytes()) != sha):
			t.Errorf("acknowledged %s: %d, %d bytes", id, resp.StatusCode, body.Len())
		}
	}
	t.Logf("%d uploads and %d deletes acknowledged before the kill", len(acked), len(deleted))
}

const killChunk = 4096

// startKillChild starts the test binary running only the test called
// child, with IMGBED_KILL_DIR=dir, and returns it with its stdout.
func startKillChild(t *testing.T, child, dir string) (*exec.Cmd, io.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.v")
	cmd.Env = append(os.Environ(), "IMGBED_KILL_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

// TestKill9Child is TestKill9's victim: it uploads, re-uploads and
// deletes images until killed, printing each acknowledgement.
func TestKill9Child(t *testing.T) {
	dir := os.Getenv("IMGBED_KILL_DIR")
	if dir == "" {
		t.Skip("run by TestKill9")
	}
	db, err := lsmgo.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(db, Config{ChunkSize: killChunk, UploadRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	h.st.local.batch = 16 << 10 // the larger images take several batches
	srv := httptest.NewServer(h.Handler())
	var ids []string
	var tokens []string
	for i := 0; ; i++ {
		data := encodePNG(t, gradient(30+i%50, 40+i%7*60)) // 1 to many chunks
		if i%5 == 4 {
			data = encodePNG(t, gradient(30+(i-1)%50, 40+(i-1)%7*60)) // a duplicate
		}
		resp, err := http.Post(srv.URL+"/api/v1/upload", "image/png", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		body.ReadFrom(resp.Body)
		resp.Body.Close()
		r := decodeResponse(t, body.Bytes())
		if !r.Status {
			t.Fatalf("upload: %s", body.Bytes())
		}
		fmt.Printf("ACK %s %s\n", r.Data.Key, r.Data.SHA256)
		ids = append(ids, r.Data.Key)
		tokens = append(tokens, r.Data.Links.DeleteURL[strings.Index(r.Data.Links.DeleteURL, "token=")+6:])
		if i%7 == 6 {
			j := i / 2
			fmt.Printf("DELETING %s\n", ids[j])
			req, _ := http.NewRequest("DELETE", srv.URL+"/api/v1/images/"+ids[j]+"?token="+tokens[j], nil)
			if resp, err := http.DefaultClient.Do(req); err == nil && resp.StatusCode == 200 {
				fmt.Printf("DEL %s\n", ids[j])
			}
		}
	}
}
