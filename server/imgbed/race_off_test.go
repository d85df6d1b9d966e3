//go:build !race

package imgbed

const raceEnabled = false
