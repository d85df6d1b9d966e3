// Package netutil holds what the RESP server and the image host both need
// from the network beyond package net.
package netutil

import "errors"

// IsTimeout reports whether err is, or wraps, a timeout (a deadline
// passed). It is a function of its own because errors.As moves its target
// to the heap: declared in a connection's read loop, the target cost an
// allocation on every read.
func IsTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}
