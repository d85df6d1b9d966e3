package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo"
)

func TestRepairCommand(t *testing.T) {
	dir, files := makeTestDB(t)
	var out, errOut bytes.Buffer
	if code := runMain([]string{"repair", dir}, &out, &errOut); code != 0 {
		t.Fatalf("repair of an intact DB: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "0 damaged") {
		t.Fatalf("repair output: %s", out.String())
	}

	// Damage a table past its first block.
	name := filepath.Join(dir, files[kindTable][0])
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/4] ^= 0xff
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	code := runMain([]string{"repair", dir}, &out, &errOut)
	if code != 3 || !strings.Contains(out.String(), "damaged: L") || !strings.Contains(out.String(), "1 damaged") {
		t.Fatalf("repair of a damaged table: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dir, lsmgo.LostDir, files[kindTable][0])); err != nil {
		t.Fatalf("damaged table not moved: %v", err)
	}
	if code := runMain([]string{"check", dir}, &out, &errOut); code != 0 {
		t.Fatalf("check after repair: exit %d\n%s", code, out.String())
	}

	if code := runMain([]string{"repair"}, &out, &errOut); code != 2 {
		t.Fatalf("repair without DIR: exit %d", code)
	}
}
