package server

import (
	"slices"
	"strconv"
)

// CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO (tracking.go has
// the mechanism), with Redis' checks in Redis' order.

// cmdClientTracking implements CLIENT TRACKING ON|OFF [REDIRECT id]
// [PREFIX p …] [BCAST] [OPTIN] [OPTOUT] [NOLOOP].
func cmdClientTracking(c *conn, _ *command, args [][]byte) error {
	var opts tracker
	var prefixes []string
	for i := 3; i < len(args); i++ {
		more := i+1 < len(args)
		switch {
		case is(args[i], "REDIRECT") && more:
			i++
			if opts.redirect != 0 {
				return redisError("ERR A client can only redirect to a single other client")
			}
			id, ok := parseInt(args[i])
			if !ok {
				return redisError(msgNotInteger)
			}
			if c.s.clientByID(uint64(id)) == nil {
				return redisError("ERR The client ID you want redirect to does not exist")
			}
			opts.redirect = uint64(id)
		case is(args[i], "BCAST"):
			opts.bcast = true
		case is(args[i], "OPTIN"):
			opts.optin = true
		case is(args[i], "OPTOUT"):
			opts.optout = true
		case is(args[i], "NOLOOP"):
			opts.noloop = true
		case is(args[i], "PREFIX") && more:
			i++
			prefixes = append(prefixes, string(args[i]))
		default:
			return redisError(msgSyntax)
		}
	}
	switch {
	case is(args[2], "OFF"):
		c.s.disableTracking(c)
	case !is(args[2], "ON"):
		return redisError(msgSyntax)
	case !opts.bcast && len(prefixes) > 0:
		return redisError("ERR PREFIX option requires BCAST mode to be enabled")
	case c.trk != nil && c.trk.bcast != opts.bcast:
		return redisError("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
	case opts.bcast && (opts.optin || opts.optout):
		return redisError("ERR OPTIN and OPTOUT are not compatible with BCAST")
	case opts.optin && opts.optout:
		return redisError("ERR You can't specify both OPTIN mode and OPTOUT mode")
	case c.trk != nil && (opts.optin && c.trk.optout || opts.optout && c.trk.optin):
		return redisError("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
	default:
		if opts.bcast {
			var have []string
			if c.trk != nil {
				have = c.trk.prefixes
			}
			if msg := prefixCollision(have, prefixes); msg != "" {
				return redisError(msg)
			}
		}
		c.s.enableTracking(c, opts, prefixes)
	}
	c.ok()
	return nil
}

// cmdClientCaching implements CLIENT CACHING YES|NO: whether the next
// command's keys are tracked, in OPTIN or OPTOUT mode.
func cmdClientCaching(c *conn, _ *command, args [][]byte) error {
	trk := c.trk
	switch {
	case trk == nil:
		return redisError("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
	case is(args[2], "YES"):
		if !trk.optin {
			return redisError("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
		}
	case is(args[2], "NO"):
		if !trk.optout {
			return redisError("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
		}
	default:
		return redisError(msgSyntax)
	}
	c.s.tracking.mu.Lock()
	trk.caching = true
	c.s.tracking.mu.Unlock()
	c.ok()
	return nil
}

// cmdClientGetRedir implements CLIENT GETREDIR: the redirect target's
// id, 0 for none, -1 with tracking off.
func cmdClientGetRedir(c *conn, _ *command, _ [][]byte) error {
	if c.trk == nil {
		c.wr.Int(-1)
	} else {
		c.wr.Int(int64(c.trk.redirect))
	}
	return nil
}

// cmdClientTrackingInfo implements CLIENT TRACKINGINFO.
func cmdClientTrackingInfo(c *conn, _ *command, _ [][]byte) error {
	flags := []string{"off"}
	redirect := int64(-1)
	var prefixes []string
	if trk := c.trk; trk != nil {
		c.s.tracking.mu.Lock()
		flags[0] = "on"
		for _, f := range []struct {
			on   bool
			name string
		}{{trk.bcast, "bcast"}, {trk.optin, "optin"}, {trk.optin && trk.caching, "caching-yes"},
			{trk.optout, "optout"}, {trk.optout && trk.caching, "caching-no"}, {trk.noloop, "noloop"},
			{trk.broken, "broken_redirect"}} {
			if f.on {
				flags = append(flags, f.name)
			}
		}
		redirect = int64(trk.redirect)
		prefixes = slices.Sorted(slices.Values(trk.prefixes))
		c.s.tracking.mu.Unlock()
	}
	w := c.wr
	w.MapHeader(3)
	w.BulkString("flags")
	w.SetHeader(len(flags))
	for _, f := range flags {
		w.BulkString(f)
	}
	w.BulkString("redirect")
	w.Int(redirect)
	w.BulkString("prefixes")
	w.ArrayHeader(len(prefixes))
	for _, p := range prefixes {
		w.BulkString(p)
	}
	return nil
}

// trackingFields are CLIENT LIST's tracking flags (t tracking, R its
// redirect target is gone, B broadcast mode) and redir: the redirect
// target, 0 without one, -1 while not tracking.
func (c *conn) trackingFields() (flags, redir string) {
	c.s.tracking.mu.Lock()
	defer c.s.tracking.mu.Unlock()
	t := c.trk
	if t == nil {
		return "", "-1"
	}
	flags = "t"
	if t.broken {
		flags += "R"
	}
	if t.bcast {
		flags += "B"
	}
	return flags, strconv.FormatUint(t.redirect, 10)
}
