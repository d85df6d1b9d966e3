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

// TestNoEngineInternalImports guards the rule that the server and bench
// modules use only the engine's public API (doc/layout.md): Go would let
// them import the engine's internal packages, since its rule goes by
// import path, but that would tie each of their releases to one engine
// commit.
func TestNoEngineInternalImports(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	const format = `{{range .Imports}}{{$.ImportPath}} {{.}}{{"\n"}}{{end}}` +
		`{{range .TestImports}}{{$.ImportPath}} {{.}}{{"\n"}}{{end}}` +
		`{{range .XTestImports}}{{$.ImportPath}} {{.}}{{"\n"}}{{end}}`
	out, err := exec.Command(goBin, "list", "-f", format,
		"github.com/lsmgo-dev/lsmgo/server/...", "github.com/lsmgo-dev/lsmgo/bench/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go list found only %d imports:\n%s", len(lines), out)
	}
	for _, line := range lines {
		if pkg, imp, _ := strings.Cut(line, " "); strings.HasPrefix(imp, "github.com/lsmgo-dev/lsmgo/internal/") {
			t.Errorf("%s imports %s", pkg, imp)
		}
	}
}
