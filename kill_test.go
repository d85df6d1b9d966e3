package lsmgo

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lsmgo-dev/lsmgo/vfs"
)

// The kill test runs the test binary itself as a child process that writes
// to a DB on the real filesystem and reports on stdout: "R" before it opens
// the DB, "O" once open, then "W mapped" or "W write" for how its WAL is
// written (a shared mapping or write(2)), "S g i" just before goroutine g applies its
// operation i and "A g i" once Apply has returned. The parent kills the
// child with SIGKILL at a random moment, runs Check on the directory,
// reopens the DB and checks it with the durability checker of the crash
// test, using line numbers of the report as the clock: an "A" line is an
// acknowledgement, and a write may be present only if its "S" line was
// printed. Each child continues on the directory its predecessors left.

var killSeed = flag.Uint64("kill.seed", 0, "seed of TestKill (0: the fixed default)")

const (
	defaultKillSeed = 20240611
	killWriters     = 4
	// killDefaultCycles is what every CI run does; LSMGO_KILL_CYCLES
	// overrides it (500 for a long run).
	killDefaultCycles = 20
	killChildDirEnv   = "LSMGO_KILL_CHILD_DIR"
	killChildSeedEnv  = "LSMGO_KILL_CHILD_SEED"
	killChildSyncEnv  = "LSMGO_KILL_CHILD_SYNC"
	killChildBlobEnv  = "LSMGO_KILL_CHILD_BLOB"
)

// killCycleBlob says whether a cycle's child separates values: every
// other cycle, with some values of up to 1 MiB (durGen.large), so kills
// land inside blob appends and syncs, and the next cycle's child, which
// does not separate, reads and compacts what it left.
func killCycleBlob(cycle int) bool { return cycle%2 == 1 }

// killSyncMode maps the sync mode a cycle uses to its name and back: most
// cycles use SyncAlways, every fifth SyncInterval and every fifth SyncNone,
// since a process crash must lose nothing under any mode.
func killSyncMode(name string) SyncMode {
	switch name {
	case "interval":
		return SyncInterval(20 * time.Millisecond)
	case "none":
		return SyncNone
	}
	return SyncAlways
}

func killCycleSync(cycle int) string {
	switch cycle % 5 {
	case 3:
		return "interval"
	case 4:
		return "none"
	}
	return "always"
}

// TestKillChild is the child process of TestKill; run on its own it skips.
func TestKillChild(t *testing.T) {
	dir := os.Getenv(killChildDirEnv)
	if dir == "" {
		t.Skip("the child process of TestKill")
	}
	seed, err := strconv.ParseUint(os.Getenv(killChildSeedEnv), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	var outMu sync.Mutex
	// Each report is one write(2) to the pipe: once it returns, the parent
	// receives the line even if this process dies right after.
	report := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		if _, err := os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n"); err != nil {
			os.Exit(2)
		}
	}
	report("R")
	opts := durOptions(vfs.Default, killSyncMode(os.Getenv(killChildSyncEnv)))
	blobs := os.Getenv(killChildBlobEnv) != ""
	if blobs {
		opts.ValueThreshold = 96
	}
	db, err := Open(dir, opts)
	if err != nil {
		report("F open: %v", err)
		os.Exit(3)
	}
	report("O")
	if walMapped(db) {
		report("W mapped")
	} else {
		report("W write")
	}
	for g := range killWriters {
		go func() {
			gen := newDurGen(seed, g)
			gen.large = blobs
			for i := 0; ; i++ {
				op := gen.next()
				report("S %d %d", g, i)
				if err := op.apply(db); err != nil {
					report("F apply: %v", err)
					os.Exit(3)
				}
				report("A %d %d", g, i)
			}
		}()
	}
	// The parent kills us long before this; the limit only keeps an
	// orphan from running forever.
	time.Sleep(time.Minute)
	os.Exit(4)
}

func killCycles(t *testing.T) int {
	if s := os.Getenv("LSMGO_KILL_CYCLES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("LSMGO_KILL_CYCLES=%q: want a positive count", s)
		}
		return n
	}
	if testing.Short() {
		return 5
	}
	return killDefaultCycles
}

func TestKill(t *testing.T) {
	seed := *killSeed
	if seed == 0 {
		seed = defaultKillSeed
	}
	cycles := killCycles(t)
	t.Logf("seed %d (replay with -kill.seed=%d; timing still varies), %d cycles", seed, seed, cycles)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	state := durState{}
	start := time.Now()
	var acked, beforeOpen, mapped int
	for cycle := range cycles {
		cseed := rng.Uint64()
		// Every fourth cycle kills the child within a few milliseconds of
		// the start of its Open, to crash recovery itself; the others at
		// a random moment of the first 300 ms after Open returned, counted
		// from the child's report so that a slow start (a loaded machine,
		// the race detector) cannot move every kill into Open.
		fromOpen := cycle%4 == 1
		delay := 3*time.Millisecond + time.Duration(rng.Int64N(int64(300*time.Millisecond)))
		if fromOpen {
			delay = time.Duration(rng.Int64N(int64(4 * time.Millisecond)))
		}
		lines := runKillChild(t, dir, cseed, killCycleSync(cycle), killCycleBlob(cycle), delay, fromOpen)
		h, opened, n, err := killHistory(lines, cseed, killCycleBlob(cycle))
		if err != nil {
			t.Fatalf("seed %d cycle %d: %v", seed, cycle, err)
		}
		acked += n
		if !opened {
			beforeOpen++
		}
		switch {
		case slices.Contains(lines, "W mapped"):
			mapped++
		case slices.Contains(lines, "W write") && killCycleSync(cycle) != "always" && runtime.GOOS == "linux":
			t.Fatalf("cycle %d (%s): the child wrote its WAL with write(2); on Linux it maps it", cycle, killCycleSync(cycle))
		}
		if err := checkImage(vfs.Default, dir); err != nil {
			t.Fatalf("seed %d cycle %d (%s, killed after %v): %v", seed, cycle, killCycleSync(cycle), delay, err)
		}
		db, err := Open(dir, durOptions(vfs.Default, SyncAlways))
		if err != nil {
			t.Fatalf("seed %d cycle %d (%s, killed after %v): reopen: %v", seed, cycle, killCycleSync(cycle), delay, err)
		}
		st, err := readDurState(db, h.keys(), cycle%4 == 0)
		if err == nil {
			end := int64(len(lines))
			err = h.check(state, st, end, end)
		}
		if err != nil {
			db.Close()
			t.Fatalf("seed %d cycle %d (%s, killed after %v, %d writes acknowledged): %v", seed, cycle, killCycleSync(cycle), delay, n, err)
		}
		if err := db.Close(); err != nil {
			t.Fatalf("seed %d cycle %d: Close: %v", seed, cycle, err)
		}
		state = st
	}
	t.Logf("%d kill -9 cycles (%d killed before Open returned, %d writing a mapped WAL), %d acknowledged writes checked, %d keys at the end, in %v",
		cycles, beforeOpen, mapped, acked, len(state), time.Since(start).Round(time.Millisecond))
	if acked == 0 {
		t.Errorf("no kill came after an acknowledged write, so no cycle checked that one survives")
	}
}

// runKillChild starts a child writing to dir, kills it with SIGKILL delay
// after its report that Open starts (fromOpen) or returned, and returns
// every line it reported.
func runKillChild(t *testing.T, dir string, seed uint64, sync string, blobs bool, delay time.Duration, fromOpen bool) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		killChildDirEnv+"="+dir,
		killChildSeedEnv+"="+strconv.FormatUint(seed, 10),
		killChildSyncEnv+"="+sync)
	if blobs {
		cmd.Env = append(cmd.Env, killChildBlobEnv+"=1")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	read := make(chan struct{})
	opening, opened := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			switch sc.Text() {
			case "R":
				close(opening)
			case "O":
				close(opened)
			}
			lines = append(lines, sc.Text())
		}
	}()
	from := opened
	if fromOpen {
		from = opening
	}
	select {
	case <-from:
	case <-read:
	}
	time.Sleep(delay)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill: %v", err)
	}
	<-read
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended on its own (%v) before the kill; stderr:\n%s\nlast lines: %q", err, stderr.String(), lines[max(0, len(lines)-5):])
	}
	return lines
}

// killHistory turns a child's report into a durHistory, regenerating each
// reported operation from the child's seed; the line number is the clock.
// It returns whether the child had opened the DB and how many operations
// were acknowledged.
func killHistory(lines []string, seed uint64, large bool) (h *durHistory, opened bool, acked int, err error) {
	h = newDurHistory(killWriters)
	gens := make([]*durGen, killWriters)
	for g := range gens {
		gens[g] = newDurGen(seed, g)
		gens[g].large = large
	}
	for n, line := range lines {
		var g, i int
		switch {
		case line == "O":
			opened = true
		case strings.HasPrefix(line, "F "):
			return nil, false, 0, fmt.Errorf("the child failed: %s", line)
		case strings.HasPrefix(line, "S "):
			if _, err := fmt.Sscanf(line, "S %d %d", &g, &i); err != nil || g < 0 || g >= killWriters || i != len(h.ops[g]) {
				return nil, false, 0, fmt.Errorf("bad report line %d: %q", n, line)
			}
			h.ops[g] = append(h.ops[g], gens[g].next())
			h.stamps[g] = append(h.stamps[g], opStamp{start: int64(n), ack: noAck})
		case strings.HasPrefix(line, "A "):
			if _, err := fmt.Sscanf(line, "A %d %d", &g, &i); err != nil || g < 0 || g >= killWriters || i != len(h.ops[g])-1 {
				return nil, false, 0, fmt.Errorf("bad report line %d: %q", n, line)
			}
			h.stamps[g][i].ack = int64(n)
			acked++
		}
	}
	h.prepare()
	return h, opened, acked, nil
}
