package lsmgo

import (
	"os"
	"strings"
	"testing"
)

// engineDeps are the only modules the engine's go.mod may require. Every
// program that embeds lsmgo takes part in the version selection of each of
// them, which is why the server's and the bench's dependencies (Prometheus,
// the peer engines …) live in their own modules (README.md, "Layout"). Add
// to this list only for a dependency the engine itself imports.
var engineDeps = map[string]bool{
	"github.com/klauspost/compress": true,
	"golang.org/x/sys":              true,
}

// TestGoModRequiresOnlyEngineDeps fails when the root go.mod requires a
// module outside engineDeps, directly or as // indirect.
func TestGoModRequiresOnlyEngineDeps(t *testing.T) {
	b, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	required := goModRequires(string(b))
	if len(required) == 0 {
		t.Fatal("found no require directive in go.mod: has its format changed?")
	}
	for _, m := range required {
		if !engineDeps[m] {
			t.Errorf("go.mod requires %s, which is not one of the engine's dependencies; a server or bench dependency belongs in server/go.mod or bench/go.mod", m)
		}
	}
}

// goModRequires returns the module paths of the require directives in a
// go.mod file's text, both the one-line form and the block form.
func goModRequires(gomod string) []string {
	var mods []string
	inBlock := false
	for line := range strings.Lines(gomod) {
		line, _, _ = strings.Cut(line, "//")
		f := strings.Fields(line)
		switch {
		case inBlock && len(f) == 1 && f[0] == ")":
			inBlock = false
		case inBlock && len(f) > 0:
			mods = append(mods, f[0])
		case len(f) == 2 && f[0] == "require" && f[1] == "(":
			inBlock = true
		case len(f) >= 3 && f[0] == "require":
			mods = append(mods, f[1])
		}
	}
	return mods
}

func TestGoModRequires(t *testing.T) {
	const gomod = `module example.com/m

go 1.25.0

require example.com/one v1.0.0 // a comment

require (
	example.com/two v1.2.3
	// a comment line
	example.com/three v0.1.0 // indirect
)
`
	got := strings.Join(goModRequires(gomod), " ")
	if want := "example.com/one example.com/two example.com/three"; got != want {
		t.Errorf("goModRequires = %q, want %q", got, want)
	}
}
