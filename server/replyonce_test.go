package server

import (
	"fmt"
	"strings"
	"testing"
)

// TestEveryCommandRepliesOnce runs every command and subcommand in the
// table with argument lists that reach its error paths (missing key,
// wrong type, bad numbers, bad options) and its success paths, each
// followed by PING: the reply after the command's own must be PONG, so a
// command that replied twice, or not at all, is caught. Handlers return
// their error for the dispatcher to write; this checks nothing writes it
// a second time.
func TestEveryCommandRepliesOnce(t *testing.T) {
	s := startServer(t, nil)
	r := dialRaw(t, s)
	setup := "SET s v\r\nHSET h f 1\r\nRPUSH l a b c\r\nSADD S m n\r\nZADD z 1 a 2 b\r\n"
	r.send(setup)
	for range 5 {
		r.reply()
	}
	argSets := [][]string{
		{}, {"s"}, {"h"}, {"l"}, {"S"}, {"z"}, {"nokey"},
		{"s", "1"}, {"h", "f"}, {"l", "0", "-1"}, {"z", "0", "1"}, {"S", "m"},
		{"s", "x", "y"}, {"h", "f", "v", "g"}, {"z", "-inf", "+inf", "LIMIT", "0", "1"},
		{"1", "s", "LEFT", "COUNT", "2"}, {"2", "z", "S", "WEIGHTS", "1", "x"},
		{"s", "9223372036854775807"}, {"l", "abc", "def"}, {"k", "EX", "0"},
	}
	skip := map[string]bool{
		// State of the connection or the server, or blocking: covered
		// by their own tests.
		"quit": true, "reset": true, "multi": true, "exec": true, "discard": true, "watch": true,
		"subscribe": true, "psubscribe": true, "unsubscribe": true, "punsubscribe": true,
		"hello": true, "flushall": true, "flushdb": true, "save": true, "bgsave": true,
		"lsmgo.resume": true, "config|set": true, "debug": true, "shutdown": true,
		"blpop": true, "brpop": true, "blmove": true, "brpoplpush": true, "blmpop": true,
		"bzpopmin": true, "bzpopmax": true, "bzmpop": true,
		testPanicCommand: true, // closes the connection
		// Connection modes with their own tests: feeding the PING back
		// (MONITOR), silenced replies, a paused server, a killed
		// connection, a wait for replicas.
		"monitor": true, "client|reply": true, "client|pause": true, "client|kill": true, "wait": true,
	}
	for _, cmd := range allCommands {
		if skip[cmd.name] || cmd.subs != nil || cmd.parent != nil && skip[cmd.parent.name] {
			continue
		}
		for _, args := range argSets {
			words := strings.Split(cmd.name, "|")
			words = append(words, args...)
			var req strings.Builder
			fmt.Fprintf(&req, "*%d\r\n", len(words))
			for _, w := range words {
				fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(w), w)
			}
			req.WriteString("PING\r\n")
			r.send(req.String())
			got := r.reply()
			if next := r.reply(); next != "+PONG\r\n" {
				t.Fatalf("%v: replied %q, then %q where PONG was due", words, got, next)
			}
		}
	}
}
