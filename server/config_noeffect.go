package server

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// Settings that Redis has and lsmgo accepts without acting on them.
// Redis' test suite and common tools set them (the encoding thresholds,
// save, lazy freeing); refusing them would stop those clients, and
// pretending they do something would be worse. Each is validated as
// Redis validates it and reads back the value set; doc/server.md lists
// them, and a test keeps that list and this table in step.

// noEffectSlot indexes Config.NoEffect. Redis 7's old ziplist names and
// the listpack names share one slot, as they are one setting in Redis.
type noEffectSlot int

const (
	hashEntriesSlot noEffectSlot = iota
	hashValueSlot
	listSizeSlot
	listCompressDepthSlot
	setIntsetEntriesSlot
	setListpackEntriesSlot
	setListpackValueSlot
	zsetEntriesSlot
	zsetValueSlot
	streamNodeBytesSlot
	streamNodeEntriesSlot
	activeRehashingSlot
	lazyEvictionSlot
	lazyExpireSlot
	lazyServerDelSlot
	lazyUserDelSlot
	lazyUserFlushSlot
	saveSlot
	maxMemorySlot
	maxMemorySamplesSlot
	keyLoadDelaySlot
	rdbKeySaveDelaySlot
	loadingEventsBytesSlot
	exitOnPanicSlot
	noEffectSlots
)

// noEffectValues holds the no-effect settings' values, normalised as
// CONFIG GET shows them; "" in a slot means Redis' default. It is an
// array, not a map, so that copying a Config copies the values too.
type noEffectValues [noEffectSlots]string

// noEffectSettings returns the table's no-effect entries.
func noEffectSettings() []*setting {
	const maxLong = math.MaxInt64
	return []*setting{
		noEffectInt("hash-max-listpack-entries", hashEntriesSlot, "512", 0, maxLong, false),
		noEffectInt("hash-max-ziplist-entries", hashEntriesSlot, "512", 0, maxLong, false),
		noEffectInt("hash-max-listpack-value", hashValueSlot, "64", 0, maxLong, true),
		noEffectInt("hash-max-ziplist-value", hashValueSlot, "64", 0, maxLong, true),
		noEffectInt("list-max-listpack-size", listSizeSlot, "-2", math.MinInt32, math.MaxInt32, false),
		noEffectInt("list-max-ziplist-size", listSizeSlot, "-2", math.MinInt32, math.MaxInt32, false),
		noEffectInt("list-compress-depth", listCompressDepthSlot, "0", 0, math.MaxInt32, false),
		noEffectInt("set-max-intset-entries", setIntsetEntriesSlot, "512", 0, maxLong, false),
		// Redis 7.2's; harmless to accept for clients that set them.
		noEffectInt("set-max-listpack-entries", setListpackEntriesSlot, "128", 0, maxLong, false),
		noEffectInt("set-max-listpack-value", setListpackValueSlot, "64", 0, maxLong, true),
		noEffectInt("zset-max-listpack-entries", zsetEntriesSlot, "128", 0, maxLong, false),
		noEffectInt("zset-max-ziplist-entries", zsetEntriesSlot, "128", 0, maxLong, false),
		noEffectInt("zset-max-listpack-value", zsetValueSlot, "64", 0, maxLong, true),
		noEffectInt("zset-max-ziplist-value", zsetValueSlot, "64", 0, maxLong, true),
		noEffectInt("stream-node-max-bytes", streamNodeBytesSlot, "4096", 0, maxLong, true),
		noEffectInt("stream-node-max-entries", streamNodeEntriesSlot, "100", 0, maxLong, false),
		noEffectBool("activerehashing", activeRehashingSlot, "yes"),
		noEffectBool("lazyfree-lazy-eviction", lazyEvictionSlot, "no"),
		noEffectBool("lazyfree-lazy-expire", lazyExpireSlot, "no"),
		noEffectBool("lazyfree-lazy-server-del", lazyServerDelSlot, "no"),
		noEffectBool("lazyfree-lazy-user-del", lazyUserDelSlot, "no"),
		noEffectBool("lazyfree-lazy-user-flush", lazyUserFlushSlot, "no"),
		// lsmgo's persistence is the WAL (appendfsync); RDB snapshots
		// never happen, so save's points only read back.
		noEffectSetting("save", saveSlot, "", "RDB save points, \"seconds changes ...\"", normaliseSave),
		// Redis' bound on its in-memory data set. lsmgo keeps the data
		// on disk and evicts nothing; maxmemory-clients bounds clients.
		noEffectSetting("maxmemory", maxMemorySlot, "0", "Redis' data set bound, bytes, for eviction", normaliseULLMemory),
		noEffectSetting("maxmemory-samples", maxMemorySamplesSlot, "5", "keys Redis samples per eviction",
			normaliseInt(1, math.MaxInt32, false)),
		// Redis' hidden settings, for its tests: CONFIG GET answers them
		// only when asked by name.
		hidden(noEffectSetting("key-load-delay", keyLoadDelaySlot, "0", "Redis' test delay per key loaded",
			normaliseInt(math.MinInt32, math.MaxInt32, false))),
		hidden(noEffectSetting("rdb-key-save-delay", rdbKeySaveDelaySlot, "0", "Redis' test delay per key saved",
			normaliseInt(math.MinInt32, math.MaxInt32, false))),
		hidden(noEffectSetting("loading-process-events-interval-bytes", loadingEventsBytesSlot, "2097152",
			"Redis' bytes loaded between event loop turns", normaliseInt(1024, math.MaxInt32, false))),
		hidden(noEffectBool("use-exit-on-panic", exitOnPanicSlot, "no")),
	}
}

// hidden marks a setting CONFIG GET answers only when asked by its name,
// not by a pattern, as Redis' hidden settings; it has no flag.
func hidden(st *setting) *setting {
	st.hidden = true
	return st
}

func noEffectSetting(name string, slot noEffectSlot, def, usage string, normalise func(string) (string, error)) *setting {
	return &setting{name: name, usage: usage + " (accepted for Redis clients; no effect)", live: true, noEffect: true,
		get: func(c *Config) string {
			if v := c.NoEffect[slot]; v != "" {
				return v
			}
			return def
		},
		set: func(c *Config, v string) error {
			n, err := normalise(v)
			if err == nil {
				c.NoEffect[slot] = n
			}
			return err
		}}
}

// noEffectInt is an integer in [lo, hi]; memory ones take Redis' units
// and refuse negatives, as Redis' memory settings do.
func noEffectInt(name string, slot noEffectSlot, def string, lo, hi int64, memory bool) *setting {
	return noEffectSetting(name, slot, def, "Redis encoding or stream node limit", normaliseInt(lo, hi, memory))
}

// normaliseInt checks an integer in [lo, hi], with Redis' units for a
// memory one, and spells it as Redis reads it back.
func normaliseInt(lo, hi int64, memory bool) func(string) (string, error) {
	return func(v string) (string, error) {
		if memory && v == "" {
			return "0", nil // Redis reads an empty memory value as 0
		}
		if n, err := parseBound(v, math.MinInt64, math.MaxInt64, memory); memory && (err != nil || n < 0) {
			if _, err := strconv.ParseUint(v, 10, 64); err == nil {
				return "", boundError(lo, hi) // Redis reads memory as unsigned
			}
			return "", errMemoryValue // Redis' words for any other bad memory value
		}
		n, err := parseBound(v, lo, hi, memory)
		return strconv.FormatInt(n, 10), err
	}
}

// normaliseULLMemory checks a memory value Redis keeps unsigned, as
// maxmemory: any uint64 in digits, or a size with units.
func normaliseULLMemory(v string) (string, error) {
	if v == "" {
		return "0", nil
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		return strconv.FormatUint(n, 10), nil
	}
	n, err := parseBound(v, 0, math.MaxInt64, true)
	if err != nil {
		return "", errMemoryValue
	}
	return strconv.FormatInt(n, 10), nil
}

var errMemoryValue = errors.New("argument must be a memory value")

func noEffectBool(name string, slot noEffectSlot, def string) *setting {
	return noEffectSetting(name, slot, def, "yes or no", func(v string) (string, error) {
		switch v = strings.ToLower(v); v {
		case "yes", "no":
			return v, nil
		}
		return "", errors.New("argument must be 'yes' or 'no'")
	})
}

// normaliseSave checks save's "seconds changes" pairs as Redis 7.0
// does (single spaces, non-negative integers, an even count; empty
// clears them) and spells the numbers as Redis reads them back.
func normaliseSave(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	fields := strings.Split(v, " ")
	if len(fields)%2 != 0 {
		return "", errInvalidSave
	}
	for i, f := range fields {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 {
			return "", errInvalidSave
		}
		fields[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(fields, " "), nil
}

//lint:ignore ST1005 Redis' exact words, which clients may match
var errInvalidSave = errors.New("Invalid save parameters")
