package bench

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// ioCounters are the write counters of /proc/self/io.
type ioCounters struct {
	// storage (write_bytes) is what this process caused to be written to
	// storage: counted when a page cache page becomes dirty, so it
	// includes background flushes and compactions and writes through
	// mmap, but a page rewritten while still dirty counts once.
	storage int64
	// syscall (wchar) is what this process passed to write calls,
	// whatever became of it; mmap writes are not in it.
	syscall int64
	ok      bool
}

func readIOCounters() ioCounters {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return ioCounters{}
	}
	storage, ok1 := procField(b, "write_bytes:")
	syscall, ok2 := procField(b, "wchar:")
	return ioCounters{storage: storage, syscall: syscall, ok: ok1 && ok2}
}

// procField parses "name: value" lines as /proc uses them.
func procField(b []byte, name string) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte(name))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// resetPeakRSS restarts the kernel's peak-RSS watermark (VmHWM) so each
// workload reports its own peak; it reports whether that worked.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSS returns the peak resident set size in bytes since the last
// resetPeakRSS (or since the process started).
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	kb, _ := procField(b, "VmHWM:")
	return kb << 10
}

// diskUsage returns the bytes the files under dir occupy on disk (allocated
// blocks, so sparse and preallocated-but-unwritten space does not count).
func diskUsage(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		} else {
			total += info.Size()
		}
		return nil
	})
	return total
}

// cpuSeconds returns the user and system CPU time this process used so
// far, all threads together.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return rusageCPU(&ru)
}

func rusageCPU(ru *syscall.Rusage) float64 {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
