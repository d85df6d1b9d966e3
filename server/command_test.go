package server

import "testing"

// TestCommandTableInvariants checks what the connection loop trusts the
// table for: a pipeView command only reads (a write reading through a
// stale view could lose a concurrent write), a command that may defer in
// a pipeline locates its keys, and every entry can run.
func TestCommandTableInvariants(t *testing.T) {
	for _, cmd := range allCommands {
		if cmd.pipe&pipeView != 0 && (cmd.flags&flagWrite != 0 || cmd.flags&flagReadonly == 0) {
			t.Errorf("%s: pipeView on a command that is not read-only", cmd.name)
		}
		if cmd.deferrable() && (cmd.step < 1 || cmd.lastKey == 0) {
			t.Errorf("%s: may defer in a pipeline but its table entry does not locate its keys", cmd.name)
		}
		if cmd.run == nil && cmd.subs == nil {
			t.Errorf("%s: neither a handler nor subcommands", cmd.name)
		}
		for _, sub := range cmd.subs {
			if sub.parent != cmd {
				t.Errorf("%s: parent is not %s", sub.name, cmd.name)
			}
		}
	}
}
