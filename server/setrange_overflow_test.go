package server

import "testing"

// TestSetRangeHugeOffset is issue 24's crash: an offset near 2^63 made the
// size check's sum wrap negative, pass, and panic on the slice.
func TestSetRangeHugeOffset(t *testing.T) {
	s := startServer(t, nil)
	r := dialRaw(t, s)
	for _, cmd := range []string{
		"SETRANGE k 9223372036854775807 A\r\n",
		"SETRANGE k 9223372036854775806 ab\r\n",
		"SET s hello\r\nSETRANGE s 9223372036854775807 A\r\n",
	} {
		r.send(cmd)
		if cmd[:3] == "SET" && cmd[3] == ' ' {
			r.reply()
		}
		eq(t, cmd, r.reply(), "-"+msgStringTooBig+"\r\n")
	}
	checkAlive(t, s)
}
