//go:build race

package imgbed

// raceEnabled: the race detector is on (its shadow memory inflates RSS).
const raceEnabled = true
