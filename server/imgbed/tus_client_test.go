package imgbed

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTusJSClient uploads with tus-js-client, the client Uppy and most
// tus programs use, run by Node: once whole in chunks, and once stopped
// after two chunks and resumed by another process from the upload URL.
// IMGBED_TUS_JS names a directory whose node_modules holds tus-js-client
// (.ci/run installs it).
func TestTusJSClient(t *testing.T) {
	dir := os.Getenv("IMGBED_TUS_JS")
	if dir == "" {
		t.Skip("IMGBED_TUS_JS is not set")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node")
	}
	th := newTestHost(t, Config{})
	data := encodePNG(t, noise(400, 400))
	file := filepath.Join(t.TempDir(), "a.png")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs("testdata/tus-client.cjs")
	run := func(args ...string) map[string][]string {
		t.Helper()
		cmd := exec.Command(node, append([]string{script, th.srv.URL + "/api/v1/tus/", file, "100000"}, args...)...)
		cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tus-js-client: %v\n%s", err, out)
		}
		lines := make(map[string][]string)
		for l := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
			k, v, _ := strings.Cut(l, " ")
			lines[k] = append(lines[k], v)
		}
		return lines
	}
	result := func(url string) response {
		t.Helper()
		resp, body := th.get(t, url)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("result of %s: %d %s", url, resp.StatusCode, body)
		}
		return decodeResponse(t, body)
	}

	out := run()
	if len(out["DONE"]) != 1 || len(out["CHUNK"]) != (len(data)+99999)/100000 {
		t.Fatalf("whole upload: %v", out)
	}
	first := result(out["DONE"][0])
	if first.Data.SHA256 != sumHex(data) || first.Data.OriginName != "tus-js.png" {
		t.Fatalf("stored %+v", first.Data)
	}
	if _, body := th.get(t, first.URL); sumHex(body) != sumHex(data) {
		t.Fatal("served bytes differ")
	}

	out = run("2")
	if len(out["STOPPED"]) != 1 {
		t.Fatalf("stopped upload: %v", out)
	}
	url := out["STOPPED"][0]
	if st, off := th.tusOffset(t, url); st != 200 || off != 200000 {
		t.Fatalf("after two chunks: %d %d", st, off)
	}
	if n := th.imageCount(t); n != 1 {
		t.Fatalf("%d images while the second upload is unfinished", n)
	}
	out = run("0", url)
	if len(out["DONE"]) != 1 || out["DONE"][0] != url || out["CHUNK"][0] != "300000" {
		t.Fatalf("resumed upload: %v", out)
	}
	if second := result(url); second.Data.SHA256 != sumHex(data) || !second.Data.Duplicate {
		t.Fatalf("resumed upload stored %+v", second.Data)
	}
}
