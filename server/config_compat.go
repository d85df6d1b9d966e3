package server

import (
	"errors"
	"net"
	"strconv"
	"strings"
)

// Settings that exist for Redis' clients and tools: Redis' listen port,
// maxmemory-clients as a percentage, and the CONFIG SET rule that lets a
// copy of CONFIG GET * be set back.

// sameValue reports whether v is st's value in c already. CONFIG SET
// accepts that as a no-op even for a restart-only or fixed setting, so
// that a tool (or Redis' "CONFIG sanity" test) may set back what CONFIG
// GET answered; Redis refuses any CONFIG SET of its immutable settings,
// which lsmgo has more of (addr, memtable-size, ...).
func sameValue(st *setting, c *Config, v string) bool {
	cur := st.get(c)
	if v == cur {
		return true
	}
	probe := *c
	return !st.fixed && st.set(&probe, v) == nil && st.get(&probe) == cur
}

// portSetting is Redis' port: the RESP listener's, read-only (the
// listen address is addr, set at the start). CONFIG GET answers the port
// the listener got, so a start on port 0 reports the real one.
func portSetting() *setting {
	return &setting{name: "port", fixed: true,
		get: func(c *Config) string {
			if c.boundPort != 0 {
				return strconv.Itoa(c.boundPort)
			}
			_, port, err := net.SplitHostPort(c.Addr)
			if err != nil {
				return "0"
			}
			return port
		},
		set: func(*Config, string) error { return errImmutable }}
}

// bindSetting is Redis' bind, read-only: the host of addr, "*" for
// every interface.
func bindSetting() *setting {
	return &setting{name: "bind", fixed: true,
		get: func(c *Config) string {
			host, _, err := net.SplitHostPort(c.Addr)
			if err != nil || host == "" {
				return "*"
			}
			return host
		},
		set: func(*Config, string) error { return errImmutable }}
}

// maxMemoryClientsSetting is maxmemory-clients: a byte count, or a
// percentage of maxmemory as Redis 7 takes it ("10%").
func maxMemoryClientsSetting() *setting {
	return &setting{name: "maxmemory-clients", live: true,
		usage: "bytes all clients' query buffers may hold together, or N% of maxmemory; the biggest clients are closed first (0: no bound)",
		get: func(c *Config) string {
			if c.MaxMemoryClientsPercent != 0 {
				return strconv.Itoa(c.MaxMemoryClientsPercent) + "%"
			}
			return strconv.FormatInt(c.MaxMemoryClients, 10)
		},
		set: func(c *Config, v string) error {
			if pct, ok := strings.CutSuffix(v, "%"); ok {
				n, err := strconv.ParseInt(pct, 10, 64)
				switch {
				case err != nil || n < 0:
					return errMemoryOrPercent
				case n > 100:
					return errors.New("percentage argument must be less or equal to 100")
				}
				// Redis reads 0% back as 0.
				c.MaxMemoryClients, c.MaxMemoryClientsPercent = 0, int(n)
				return nil
			}
			n, err := parseBound(v, 0, 1<<63-1, true)
			if err != nil {
				return errMemoryOrPercent
			}
			c.MaxMemoryClients, c.MaxMemoryClientsPercent = n, 0
			return nil
		}}
}

var errMemoryOrPercent = errors.New("argument must be a memory or percent value")

// maxMemoryClients is the bound maxmemory-clients sets, in bytes; 0 is
// none.
func (c *Config) maxMemoryClients() int64 {
	if c.MaxMemoryClientsPercent == 0 {
		return c.MaxMemoryClients
	}
	maxMemory, _ := strconv.ParseUint(lookupSetting("maxmemory").get(c), 10, 64)
	pct := uint64(c.MaxMemoryClientsPercent)
	bound := maxMemory / 100 * pct // exact enough where maxMemory*pct would overflow
	if maxMemory <= 1<<64/128 {
		bound = maxMemory * pct / 100
	}
	return int64(min(bound, 1<<63-1))
}
