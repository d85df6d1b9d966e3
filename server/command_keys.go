package server

// Where a command's keys are among its arguments, found as Redis 7 finds
// them (getKeysFromCommandWithSpecs): by the command's key specs
// (acl_table.go) when they are complete and their flags fixed, else by
// the command's own rule, a keysProc. ACL checks and COMMAND GETKEYS use
// the same answer, so a key COMMAND GETKEYS names is one ACL rules judge.

// keyRef is a key among a command's arguments and how the command uses it.
type keyRef struct {
	pos   int
	flags keyFlags
}

// keysProc finds a command's keys where its key specs cannot: args
// starting at the command's name, keys appended to buf.
type keysProc func(args [][]byte, buf []keyRef) []keyRef

// keysProcs are Redis' getkeys procedures of the commands whose specs
// are incomplete (SORT, MIGRATE) or whose key flags depend on the
// arguments (SET, BITFIELD). The other commands with a procedure in Redis
// (EVAL, ZUNIONSTORE, LMPOP …) need it only when their numkeys argument
// is bad, and then it finds no key: what finding none here gives too.
var keysProcs = map[string]keysProc{
	"sort":     sortKeys(true),
	"sort_ro":  sortKeys(false),
	"migrate":  migrateKeys,
	"set":      setKeys,
	"bitfield": bitfieldKeys,
}

// commandKeys appends to buf the keys args name. Arguments that do not
// fit the specs (a bad count, too few) yield no keys: the command then
// fails on its arguments.
func commandKeys(cmd *command, args [][]byte, buf []keyRef) []keyRef {
	start := len(buf)
	if !cmd.acl.variableFlags() {
		if keys, ok := keysBySpecs(cmd, args, buf); ok {
			return keys
		}
	}
	if proc := keysProcs[cmd.name]; proc != nil {
		return proc(args, buf[:start])
	}
	return buf[:start]
}

// keysBySpecs applies every key spec of cmd in turn (Redis'
// getKeysUsingKeySpecs); false when one cannot apply (an unknown or
// incomplete spec, a bad count, arguments missing).
func keysBySpecs(cmd *command, args [][]byte, buf []keyRef) ([]keyRef, bool) {
	start, argc := len(buf), len(args)
	for _, ks := range cmd.acl.specs {
		first := ks.index
		if ks.keyword != "" {
			first = ks.keywordEnd(args)
			if first == 0 {
				continue
			}
		} else if first == 0 {
			return buf[:start], false
		}
		var last, step int
		switch {
		case ks.keyNumIdx >= 0:
			if ks.keyNumIdx >= argc-first {
				return buf[:start], false
			}
			n, ok := parseInt(args[first+ks.keyNumIdx])
			if !ok || n < 0 || n > int64(argc) {
				return buf[:start], false
			}
			first += ks.firstKey
			last, step = first+int(n)-1, ks.step
		case ks.step == 0:
			return buf[:start], false
		case ks.lastKey >= 0:
			last, step = first+ks.lastKey, ks.step
		case ks.limit == 0:
			last, step = argc+ks.lastKey, ks.step
		default:
			last, step = first+(argc-first)/ks.limit+ks.lastKey, ks.step
		}
		if last >= argc || last < first || first >= argc {
			return buf[:start], false
		}
		for i := first; i <= last; i += step {
			buf = append(buf, keyRef{pos: i, flags: ks.flags})
		}
		if ks.flags&keyIncomplete != 0 {
			return buf[:start], false
		}
	}
	return buf, true
}

// keywordEnd finds ks's keyword in args, from startFrom forwards or (when
// negative) from the end backwards, and returns the index after it, or 0.
// Like Redis, it never looks at the last argument it would reach, which
// could not be followed by a key.
func (ks keySpec) keywordEnd(args [][]byte) int {
	argc := len(args)
	from, to, dir := ks.startFrom, argc-1, 1
	if ks.startFrom <= 0 {
		from, to, dir = argc+ks.startFrom, 1, -1
	}
	for i := from; i != to; i += dir {
		if i >= argc || i < 1 {
			break
		}
		if is(args[i], ks.keyword) {
			return i + 1
		}
	}
	return 0
}

// variableFlags reports whether a spec's key flags depend on the
// arguments, so that the command's own rule must find them.
func (info aclInfo) variableFlags() bool {
	for _, ks := range info.specs {
		if ks.flags&keyVariable != 0 {
			return true
		}
	}
	return false
}

// movable reports whether the keys move with the arguments: some spec
// starts at a keyword or counts its keys, as Redis rules movablekeys.
func (info aclInfo) movable() bool {
	for _, ks := range info.specs {
		if ks.index == 0 || ks.keyNumIdx >= 0 || ks.step == 0 {
			return true
		}
	}
	return false
}

// hasKeys reports whether the command takes keys at all.
func (info aclInfo) hasKeys() bool {
	for _, ks := range info.specs {
		if ks.flags&keyNotKey == 0 {
			return true
		}
	}
	return false
}

// sortKeys finds SORT's keys: the sorted key, read, and, with store, the
// last STORE's destination, overwritten (SORT_RO has no STORE).
func sortKeys(store bool) keysProc {
	return func(args [][]byte, buf []keyRef) []keyRef {
		buf = append(buf, keyRef{pos: 1, flags: keyRO | keyAccess})
		if !store {
			return buf
		}
		dst := 0
		for i := 2; i < len(args); i++ {
			switch {
			case is(args[i], "LIMIT"):
				i += 2
			case is(args[i], "GET") || is(args[i], "BY"):
				i++
			case is(args[i], "STORE") && i+1 < len(args):
				dst = i + 1
			}
		}
		if dst > 0 {
			buf = append(buf, keyRef{pos: dst, flags: keyOW | keyUpdate})
		}
		return buf
	}
}

// migrateKeys finds MIGRATE's keys: the key argument, or with KEYS (when
// the key argument is empty) every argument after it.
func migrateKeys(args [][]byte, buf []keyRef) []keyRef {
	first, n := 3, 1
	for i := 6; i < len(args); i++ {
		if is(args[i], "KEYS") {
			if len(args[3]) > 0 {
				return buf
			}
			first, n = i+1, len(args)-i-1
			break
		}
		switch {
		case is(args[i], "AUTH"):
			i++
		case is(args[i], "AUTH2"):
			i += 2
		}
	}
	for i := range n {
		buf = append(buf, keyRef{pos: first + i, flags: keyRW | keyAccess | keyDelete})
	}
	return buf
}

// setKeys: SET reads its key too when it has GET.
func setKeys(args [][]byte, buf []keyRef) []keyRef {
	for _, a := range args[min(3, len(args)):] {
		if is(a, "GET") {
			return append(buf, keyRef{pos: 1, flags: keyRW | keyAccess | keyUpdate})
		}
	}
	return append(buf, keyRef{pos: 1, flags: keyOW | keyUpdate})
}

// bitfieldKeys: BITFIELD only reads when all its operations are GETs
// (and OVERFLOWs); anything else, a syntax error included, counts as a
// write.
func bitfieldKeys(args [][]byte, buf []keyRef) []keyRef {
	flags := keyRO | keyAccess
	for i := 2; i < len(args); i++ {
		rest := len(args) - i - 1
		if is(args[i], "GET") && rest >= 2 {
			i += 2
		} else if is(args[i], "OVERFLOW") && rest >= 1 {
			i++
		} else {
			flags = keyRW | keyAccess | keyUpdate
			break
		}
	}
	return append(buf, keyRef{pos: 1, flags: flags})
}
