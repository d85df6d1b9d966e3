package errorfs

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
)

// Toggle is an Injector that a test switches on and off while the code
// under test runs in other goroutines. It fails the operations in its set
// whose path contains its substring, only while enabled. A new Toggle is
// disabled. All methods are safe for concurrent use.
type Toggle struct {
	err          error
	ops          []Op
	pathContains string

	mu      sync.Mutex
	enabled bool
	// pass is how many more matching operations succeed before the
	// failures start (AfterN).
	pass  int64
	count int64
	// torn, when non-nil, makes failed Writes torn (TornPrefix).
	torn *rand.Rand
}

var _ TornWriter = (*Toggle)(nil)

// NewToggle returns a disabled Toggle that, once enabled, returns err for
// every operation in ops whose path contains pathContains ("" matches
// every path). A nil err means ErrInjected; an empty ops means every
// operation.
func NewToggle(err error, ops []Op, pathContains string) *Toggle {
	if err == nil {
		err = ErrInjected
	}
	return &Toggle{err: err, ops: slices.Clone(ops), pathContains: pathContains}
}

// Enable makes every following matching operation fail.
func (t *Toggle) Enable() { t.AfterN(0) }

// AfterN enables the Toggle but lets the next n matching operations
// succeed; every matching operation after them fails.
func (t *Toggle) AfterN(n int64) {
	t.mu.Lock()
	t.enabled, t.pass = true, n
	t.mu.Unlock()
}

// Disable stops the failures; Count keeps its value.
func (t *Toggle) Disable() {
	t.mu.Lock()
	t.enabled = false
	t.mu.Unlock()
}

// Count returns how many errors the Toggle has injected.
func (t *Toggle) Count() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count
}

// SetTornWrites turns torn writes on or off: while on, a Write that the
// Toggle fails first writes a random prefix (possibly empty, never the
// whole buffer) of its buffer. The prefix lengths come from a generator
// seeded with seed, so a single-goroutine test sees the same tears on
// every run.
func (t *Toggle) SetTornWrites(on bool, seed uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.torn = nil
	if on {
		t.torn = rand.New(rand.NewPCG(seed, seed))
	}
}

// TornPrefix implements TornWriter: 0 while torn writes are off.
func (t *Toggle) TornPrefix(n int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.torn == nil || n <= 0 {
		return 0
	}
	return t.torn.IntN(n)
}

// MaybeError implements Injector.
func (t *Toggle) MaybeError(op Op, path string) error {
	if (len(t.ops) > 0 && !slices.Contains(t.ops, op)) || !strings.Contains(path, t.pathContains) {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.enabled {
		return nil
	}
	if t.pass > 0 {
		t.pass--
		return nil
	}
	t.count++
	return t.err
}
