package server

import "github.com/lsmgo-dev/lsmgo"

// Replies wait for durability, locks do not. A write commits with
// lsmgo.DB.CommitAsync while the command holds its keys' stripes: the
// batch is in the WAL file and visible when that returns, so the command
// releases its stripes at once, and the next writer of the key reads it
// without waiting for an fsync. Only under appendfsync always is there an
// fsync left to wait for, and the connection waits for it just before
// its reply bytes go out (countingWriter): by then, in the common case,
// the command has released its stripes, so the writes of one hot key,
// one after another under its stripe, share fsyncs instead of taking one
// each. The cost: another client may read a write before its fsync (a
// read, a blocked client served by it, a notification), and a power loss
// in between loses that write, whose client was never answered. Redis
// under appendfsync always shows no client an unsynced write (it fsyncs
// before sending any replies); doc/server.md says so. The replies of EXEC, scripts and pipelined
// batches pass the same gate, so a reply still means durable.

// willReplyAfter records p, the durability of a write the connection
// just committed, for its replies to wait for. A connection's commits
// are in WAL order, so the newest is the one to wait for; a zero Pending
// (nothing to wait for, under appendfsync everysec or no) never replaces
// one that has something.
func (c *conn) willReplyAfter(p lsmgo.Pending) {
	if p != (lsmgo.Pending{}) {
		c.durable = p
	}
}

// awaitDurable waits until every write the connection committed is
// durable. When an fsync failed instead, the engine has stopped taking
// writes (fail-stop, as Redis exits when an fsync of its AOF fails under
// appendfsync always) and the error goes to the connection's writer,
// which keeps it: no reply leaves any more, so no client is told that a
// write whose outcome is unknown succeeded, and the connection closes.
func (c *conn) awaitDurable() error {
	p := c.durable
	if p == (lsmgo.Pending{}) {
		return nil
	}
	c.durable = lsmgo.Pending{}
	if c.loop != nil && c.s.config().AppendFsync == "always" {
		c.detach() // Wait waits for an fsync
	}
	if err := p.Wait(); err != nil {
		c.s.log.Error("a write's WAL fsync failed after it was visible; closing the client without its reply (restart the server to write again)",
			"client", c.id, "err", err)
		return err
	}
	return nil
}
