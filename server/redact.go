package server

import (
	"errors"
	"strings"
)

// secret marks a setting as holding a credential (doc/server.md,
// "Secrets"): CONFIG GET shows redactedMarker for it once it is set, the
// slow log hides the values CONFIG SET gives it, and the marker itself is
// refused as its value, so that a tool copying CONFIG GET * back through
// CONFIG SET cannot replace a password by the marker.
func secret(st *setting) *setting {
	set := st.set
	st.secret = true
	st.set = func(c *Config, v string) error {
		if v == redactedMarker {
			return errSetMarker
		}
		return set(c, v)
	}
	return st
}

var errSetMarker = errors.New("argument is the " + redactedMarker + " marker CONFIG GET shows for a secret, not a value")

// shown returns the value CONFIG GET reports for st: the value, or the
// marker for a secret that is set.
func (st *setting) shown(c *Config) string {
	v := st.get(c)
	if st.secret && v != "" {
		return redactedMarker
	}
	return v
}

// redactArgs returns the arguments of cmd as the slow log may keep them:
// passwords of AUTH and HELLO AUTH, ACL SETUSER's rules, and the values CONFIG SET gives
// secret settings, become redactedMarker. args is not modified.
func redactArgs(cmd *command, args [][]byte) [][]byte {
	var hide []int
	switch cmd.name {
	case "auth":
		for i := 1; i < len(args); i++ {
			hide = append(hide, i)
		}
	case "hello":
		for i := 2; i+2 < len(args); i++ {
			if is(args[i], "AUTH") {
				hide = append(hide, i+1, i+2)
				i += 2
			}
		}
	case "acl|setuser":
		// Its rules may hold clear passwords (>pass, <pass); Redis
		// hides them all.
		for i := 3; i < len(args); i++ {
			hide = append(hide, i)
		}
	case "migrate":
		for i := 6; i < len(args) && !is(args[i], "KEYS"); i++ {
			switch {
			case is(args[i], "AUTH"):
				hide = append(hide, i+1)
				i++
			case is(args[i], "AUTH2"):
				hide = append(hide, i+1, i+2)
				i += 2
			}
		}
	case "config|set":
		for i := 2; i+1 < len(args); i += 2 {
			if st := lookupSetting(strings.ToLower(string(args[i]))); st != nil && st.secret {
				hide = append(hide, i+1)
			}
		}
	}
	if hide == nil {
		return args
	}
	out := append([][]byte(nil), args...)
	for _, i := range hide {
		if i < len(out) { // MIGRATE ... AUTH with its password missing
			out[i] = []byte(redactedMarker)
		}
	}
	return out
}
