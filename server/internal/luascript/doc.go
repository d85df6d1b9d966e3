// Package luascript runs Redis scripts: Lua 5.1 (github.com/yuin/gopher-lua)
// with the sandbox, the redis library and the cjson, cmsgpack, bit and
// struct libraries that Redis 7 embeds, and the conversions between RESP
// replies and Lua values that Redis documents.
//
// The package knows nothing of the server: a script's redis.call goes to a
// Caller, which runs the command and returns its reply as a resp.Value. The
// server owns atomicity, isolation and persistence; this package owns the
// language.
//
// Invariants:
//   - A VM is used by one goroutine at a time (the server runs one script at
//     a time, as Redis does); only Kill and Running may be called from other
//     goroutines.
//   - Scripts cannot create globals or modify the library tables: the
//     globals and every library table are read-only proxies, and reading a
//     global that does not exist is an error, as in Redis 7.
//   - A script cannot hang or exhaust the process: every instruction checks
//     the call's done channel, which Kill closes, and a watchdog closes it
//     when the Go heap grows past the memory limit while the script runs.
//     The call stack and the value stack are bounded.
package luascript
