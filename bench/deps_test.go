package bench

import (
	"os/exec"
	"strings"
	"testing"
)

// TestMainBinaryLinksNoPeer guards the rule that peers are imported only
// under bench/: the lsmgo binary and the engine must not depend on them.
func TestMainBinaryLinksNoPeer(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/lsmgo-dev/lsmgo/server/cmd/lsmgo", "github.com/lsmgo-dev/lsmgo").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, peer := range []string{"cockroachdb/pebble", "dgraph-io/badger", "go.etcd.io/bbolt", "syndtr/goleveldb", "HdrHistogram"} {
			if strings.Contains(dep, peer) {
				t.Errorf("the lsmgo binary links %s", dep)
			}
		}
	}
}
