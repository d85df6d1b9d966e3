//go:build !race

package bench

// raceEnabled lets heavy tests scale their work down under the race
// detector, which slows code five to ten times.
const raceEnabled = false
