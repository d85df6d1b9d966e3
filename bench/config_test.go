package bench

import (
	"io"
	"strconv"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	c, err := ParseFlags([]string{"--workloads=fillrandom,mixed:4,fillsync:16", "--engines=lsmgo,bbolt",
		"--num=5000", "--mixed-ratio=90:10", "--distribution=zipfian"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := []WorkloadSpec{{Name: "fillrandom"}, {Name: "mixed", Threads: 4}, {Name: "fillsync", Threads: 16}}
	if len(c.Workloads) != len(want) {
		t.Fatalf("workloads %v, want %v", c.Workloads, want)
	}
	for i := range want {
		if c.Workloads[i] != want[i] {
			t.Fatalf("workloads %v, want %v", c.Workloads, want)
		}
	}
	if c.threads(c.Workloads[0]) != 1 || c.threads(c.Workloads[1]) != 4 {
		t.Errorf("thread counts wrong: %v", c.Workloads)
	}
	if c.ReadPercent != 90 || c.Num != 5000 || c.Distribution != Zipfian || strings.Join(c.Engines, ",") != "lsmgo,bbolt" {
		t.Errorf("parsed %+v", c)
	}

	for _, bad := range [][]string{
		{"--workloads=nosuch"},
		{"--workloads=mixed:0"},
		{"--engines=lsmgo,lsmgo"},
		{"--engines=mysql"},
		{"--mixed-ratio=50"},
		{"--distribution=normal"},
		{"--key-size=4"},
		{"--num=0"},
		{"--compressibility=0"},
		{"extra"},
	} {
		if _, err := ParseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestDefaultsMatchTheIssue(t *testing.T) {
	c, err := ParseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Num != 1_000_000 || c.KeySize != 32 || c.ValueSize != 128 || c.Compressibility != 0.5 ||
		c.CacheSize != 64<<20 || c.ReadPercent != 50 || c.Threads != 1 || len(c.Workloads) != len(workloadList)-len(ycsbWorkloads) {
		t.Errorf("defaults %+v", c)
	}
}

func TestParseFlagsLargeValues(t *testing.T) {
	c, err := ParseFlags([]string{"--engines=lsmgo", "--value-size=102400", "--value-threshold=8192"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.ValueSize != 102400 || c.ValueThreshold != 8192 {
		t.Errorf("value size %d, threshold %d; want 102400, 8192", c.ValueSize, c.ValueThreshold)
	}
	for _, bad := range []string{"--value-size=" + strconv.Itoa(maxValueSize+1), "--value-threshold=0"} {
		if _, err := ParseFlags([]string{"--engines=lsmgo", bad}, io.Discard); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
