package server

import (
	"bytes"
	"fmt"
	"runtime"
	"runtime/debug"
)

func init() {
	r := flagReadonly
	register(spec{name: "memory", arity: -2, group: "server", since: "4.0.0", summary: "A container for memory diagnostics commands.",
		subs: []spec{
			{name: "usage", arity: -3, flags: r, firstKey: 2, lastKey: 2, step: 1, since: "4.0.0",
				summary: "Estimates the bytes the engine holds for a key (doc/server.md).", run: cmdMemoryUsage},
			{name: "stats", arity: 2, since: "4.0.0", summary: "Returns details about the server's memory use.", run: cmdMemoryStats},
			{name: "doctor", arity: 2, since: "4.0.0", summary: "Outputs a memory problems report.", run: cmdMemoryDoctor},
			{name: "purge", arity: 2, since: "4.0.0", summary: "Returns freed heap memory to the operating system.", run: cmdMemoryPurge},
			{name: "help", arity: 2, since: "4.0.0", summary: "Returns helpful text about the different subcommands.", run: cmdHelp},
		}})
}

// memorySamples is MEMORY USAGE's default sample count, Redis'.
const memorySamples = 5

// cmdMemoryUsage implements MEMORY USAGE key [SAMPLES n]: the bytes of
// the key's engine entries (keys and values, before compression), which
// is what the key costs this server on disk and in its caches, not in
// memory as in Redis. For a collection it averages the first n element
// entries (all of them for 0) and scales by the element count, as Redis
// samples its elements.
func cmdMemoryUsage(c *conn, _ *command, args [][]byte) error {
	samples := int64(memorySamples)
	for i := 3; i < len(args); i++ {
		if !is(args[i], "SAMPLES") || i+1 >= len(args) {
			return redisError(msgSyntax)
		}
		i++
		n, ok := parseInt(args[i])
		if !ok {
			return redisError(msgNotInteger)
		}
		if n < 0 {
			return redisError(msgSyntax)
		}
		samples = n
		if n == 0 {
			samples = 1 << 62 // all: past any count, and times 2 fits
		}
	}
	defer c.pin()()
	key := args[2]
	e, exists, err := c.getEntry(key)
	if err != nil || !exists {
		if err == nil {
			c.wr.Null()
		}
		return err
	}
	size := int64(len(dataKey(nil, e.ns, key)) + 1 + len(e.payload))
	if e.typ != typeString {
		m, err := decodeMeta(key, e)
		if err != nil {
			return err
		}
		perElem := int64(1)
		switch m.typ {
		case typeZSet:
			perElem = 2 // a member entry and a score index entry
		case typeFragString:
			// Its count is a length in bytes, not in fragments, and
			// zero fragments are not stored: sum them all (a 512 MiB
			// string has at most 2^17).
			samples, m.count = 1<<62, 0
		}
		prefix := int64(len(elemsKey(nil, key, m)))
		var seen, bytesSeen int64
		err = c.s.ks.scanElems(c.reader(), key, m, nil, func(elem, val []byte) bool {
			seen++
			bytesSeen += prefix + int64(len(elem)+len(val))
			return seen < samples*perElem
		})
		if err != nil {
			return err
		}
		switch {
		case m.typ == typeFragString:
			size += bytesSeen
		case seen > 0:
			size += bytesSeen * m.count * perElem / seen
		}
	}
	c.wr.Int(size)
	return nil
}

// cmdMemoryStats reports Redis' MEMORY STATS fields that have a meaning
// here, from the Go runtime and the engine, and the engine's own.
func cmdMemoryStats(c *conn, _ *command, _ [][]byte) error {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := c.s.db.Metrics()
	fields := []struct {
		name  string
		value int64
	}{
		{"total.allocated", int64(ms.HeapAlloc)},
		{"clients.normal", c.s.clientMem.total.Load()},
		{"lua.caches", c.s.scripts.cachedScripts.Load()},
		{"allocator.allocated", int64(ms.HeapAlloc)},
		{"allocator.active", int64(ms.HeapInuse)},
		{"allocator.resident", int64(ms.Sys - ms.HeapReleased)},
		{"lsmgo.memtables", int64(m.MemTables.Bytes)},
		{"lsmgo.block-cache", int64(m.Cache.Bytes)},
	}
	c.wr.MapHeader(len(fields))
	for _, f := range fields {
		c.wr.BulkString(f.name)
		c.wr.Int(f.value)
	}
	return nil
}

// cmdMemoryDoctor reports what the server can tell about its memory.
// Data lives on disk here, so the usual Redis worries (a dataset near
// maxmemory, fragmentation of the value heap) do not arise; the report
// says how the heap splits between the engine's buffers and the rest.
func cmdMemoryDoctor(c *conn, _ *command, _ [][]byte) error {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := c.s.db.Metrics()
	var b bytes.Buffer
	fmt.Fprintf(&b, "lsmgo keeps its data on disk; memory holds the engine's memtables (%s), its block cache (%s), client buffers (%s) and the Go heap around them (%s in use of %s obtained from the OS).",
		humanSize(int64(m.MemTables.Bytes)), humanSize(int64(m.Cache.Bytes)), humanSize(c.s.clientMem.total.Load()),
		humanSize(int64(ms.HeapInuse)), humanSize(int64(ms.Sys)))
	if ms.HeapIdle-ms.HeapReleased > ms.HeapInuse {
		b.WriteString(" More idle heap is held than used: MEMORY PURGE returns it to the operating system.")
	} else {
		b.WriteString(" No memory problem detected.")
	}
	c.wr.Bulk(b.Bytes())
	return nil
}

// cmdMemoryPurge returns free heap pages to the operating system, as
// Redis asks jemalloc to.
func cmdMemoryPurge(c *conn, _ *command, _ [][]byte) error {
	debug.FreeOSMemory()
	c.ok()
	return nil
}
