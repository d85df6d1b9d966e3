package server

import (
	"cmp"
	"sync"
)

// maxWindows bounds how many collections have a window at once (ZPOPMIN's
// in zpopwindow.go); a new window past it drops another collection's.
const maxWindows = 256

// windowBytes bounds the members one window holds, so that windows of big
// members stay small (a member past it makes no window).
const windowBytes = 4096

// windows holds the windows of the collections being popped, by the
// prefix of their element keys (elemsKey: namespace, key and version, so
// a window never outlives its version of the collection). The map is
// shared between connections; a window is read only under its key's lock.
type windows[W any] struct {
	mu  sync.Mutex
	m   map[string]*W
	max int // the most collections with a window; 0 is maxWindows
}

// get returns the window of the collection under prefix, or nil.
func (w *windows[W]) get(prefix []byte) *W {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m[string(prefix)]
}

// empty reports whether no collection has a window.
func (w *windows[W]) empty() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m) == 0
}

// clear drops every window.
func (w *windows[W]) clear() {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.m)
}

// put makes win the window of the collection under prefix, dropping
// another's when maxWindows collections have one, or drops the
// collection's window when win is nil.
func (w *windows[W]) put(prefix []byte, win *W) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if win == nil {
		delete(w.m, string(prefix))
		return
	}
	if w.m == nil {
		w.m = make(map[string]*W)
	}
	if _, ok := w.m[string(prefix)]; !ok && len(w.m) >= cmp.Or(w.max, maxWindows) {
		for k := range w.m {
			delete(w.m, k)
			break
		}
	}
	w.m[string(prefix)] = win
}
