package server

import "bytes"

// SPOP's random pick (randomElem) descends the byte-wise trie of the set's
// members, and each step seeks twice (the first and the last member under
// the chosen prefix) through every level of the tree: at -P 16 on a
// 63k-member set, 72% of SPOP's CPU went to those picks, 36% to the
// backward seeks alone (the memtable finds each step back by a search
// from its top; pprof of main under redis-benchmark -t spop -P 16 -c 50
// -r 100000). Successive pops of one set visit the same top nodes of that
// trie every time, so SPOP keeps what its seeks found, per set, in a
// pickNodes: the first and last member under each prefix it descended
// through. A pop then seeks only below the nodes it has not visited yet.
//
// The memo is exact, so each pop is the same independent draw as without
// it: a pop drops the nodes whose first or last member it popped (the
// only ones whose bounds it changes); a write by anything but SPOP
// (SADD, SREM, SMOVE, or one this server did not make, which shows as a
// count the memo did not expect) drops the set's memo; replicated
// batches, a promotion, and a batch that fails to commit or is dropped
// unapplied (keyspace.lostBatch) drop every memo. The count alone does
// not tell a lost batch: one holding SADD x; SPOP ends at the count the
// memo expects, with nodes bounded by x. A memo is by the set's element
// prefix (namespace, key, version), so it never outlives its version of
// the set, and it is read and changed only under the set's lock.
const (
	// maxNodeBytes bounds one set's memo; past it, new nodes are sought
	// every time (the top ones, visited by every pop, come first).
	// (A 63k-member set of redis-benchmark's 12-digit members has 11k
	// nodes of more than one member, about 1.4 MB.)
	maxNodeBytes = 2 << 20
	// maxNodeSets bounds how many sets have a memo at once.
	maxNodeSets = 8
	// nodeOverhead approximates a node's map entry and slice headers.
	nodeOverhead = 80
)

// pickNodes is one set's memo of randomElem's descent.
type pickNodes struct {
	count int64 // the set's size the memo holds for
	nodes map[string]pickNode
	bytes int
}

// pickNode is the first and last member under a prefix.
type pickNode struct{ lo, hi []byte }

// node returns the node of prefix; ok is false when it is not held.
func (p *pickNodes) node(prefix []byte) (n pickNode, ok bool) {
	if p == nil {
		return n, false
	}
	n, ok = p.nodes[string(prefix)]
	return n, ok
}

// add holds the node of prefix, unless the memo is full. lo and hi must
// not change afterwards.
func (p *pickNodes) add(prefix, lo, hi []byte) {
	if p == nil {
		return
	}
	size := len(prefix) + len(lo) + len(hi) + nodeOverhead
	if p.bytes+size > maxNodeBytes {
		return
	}
	if p.nodes == nil {
		p.nodes = make(map[string]pickNode)
	}
	if _, ok := p.nodes[string(prefix)]; !ok {
		p.nodes[string(prefix)] = pickNode{lo: lo, hi: hi}
		p.bytes += size
	}
}

// reset drops every node.
func (p *pickNodes) reset() { p.nodes, p.bytes = nil, 0 }

// popped drops the nodes whose bounds the removal of elem changes: those
// of its prefixes (the empty one, the whole set, included) whose first or
// last member it is. A node elem is inside of keeps its bounds, and with
// them the shape of the descent below it.
func (p *pickNodes) popped(elem []byte) {
	if p == nil {
		return
	}
	for i := 0; i <= len(elem); i++ {
		if n, ok := p.nodes[string(elem[:i])]; ok && (bytes.Equal(n.lo, elem) || bytes.Equal(n.hi, elem)) {
			delete(p.nodes, string(elem[:i]))
			p.bytes -= i + len(n.lo) + len(n.hi) + nodeOverhead
		}
	}
}

// spopNodes returns the memo of the set m at key for a pop, a new one
// when it has none or the set's size is not the one the memo holds for;
// it builds the memo's name in *buf.
func (ks *keyspace) spopNodes(buf *[]byte, key []byte, m collMeta) *pickNodes {
	*buf = elemsKey(*buf, key, m)
	p := ks.spops.get(*buf)
	if p == nil || p.count != m.count {
		p = &pickNodes{count: m.count}
		ks.spops.put(*buf, p)
	}
	return p
}

// dropNodes drops the SPOP memo of the set m at key, which a write other
// than SPOP changes; it builds the memo's name in *buf.
func (ks *keyspace) dropNodes(buf *[]byte, key []byte, m collMeta) {
	if ks.spops.empty() {
		return
	}
	*buf = elemsKey(*buf, key, m)
	ks.spops.put(*buf, nil)
}
