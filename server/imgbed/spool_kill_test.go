package imgbed

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// spoolKillUploads is how many uploads the child has spooling when it is
// killed.
const spoolKillUploads = 3

// TestKill9Spools kills a process while uploads are being spooled to
// DIR/tmp: the spool files are left behind, and the next New removes
// them.
func TestKill9Spools(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "tmp")
	cmd, out := startKillChild(t, "TestKill9SpoolsChild", dir)
	defer cmd.Wait()
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	spooling := false
	for !spooling && lines.Scan() {
		spooling = lines.Text() == "SPOOLING"
	}
	if !spooling {
		t.Fatal("the child ended before its uploads were spooling")
	}
	cmd.Process.Kill() // SIGKILL
	cmd.Wait()
	if left, err := SpoolFiles(spool); err != nil || len(left) != spoolKillUploads {
		t.Fatalf("after the kill: %d spool files (%v), want the %d the child had open", len(left), err, spoolKillUploads)
	}
	db, err := lsmgo.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := New(db, Config{SpoolDir: spool}); err != nil {
		t.Fatal(err)
	}
	if left, err := SpoolFiles(spool); err != nil || len(left) != 0 {
		t.Fatalf("after New: %d spool files left (%v)", len(left), err)
	}
}

// TestKill9SpoolsChild is TestKill9Spools' victim: it starts uploads
// larger than the in-memory head, stalls them halfway, says SPOOLING once
// each has its spool file, and waits to be killed.
func TestKill9SpoolsChild(t *testing.T) {
	dir := os.Getenv("IMGBED_KILL_DIR")
	if dir == "" {
		t.Skip("run by TestKill9Spools")
	}
	db, err := lsmgo.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	spool := filepath.Join(dir, "tmp")
	h, err := New(db, Config{SpoolDir: spool, UploadRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.Handler())
	// Only the PNG signature is checked before the body is spooled.
	body := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 2*headLen)...)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 8; i < len(body); i++ {
		body[i] = byte(r.Uint32())
	}
	for range spoolKillUploads {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\nContent-Length: %d\r\n\r\n", len(body))
		conn.Write(body[:len(body)*3/4]) // past the head, not to the end
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if names, _ := SpoolFiles(spool); len(names) == spoolKillUploads {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the uploads never reached their spool files")
		}
	}
	fmt.Println("SPOOLING")
	time.Sleep(time.Minute)
}
