package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// ACL users, as Redis 7.2 has them. A user's permissions are an immutable
// aclPerms value behind an atomic pointer: ACL SETUSER builds a changed
// copy and swaps it in, so the connections authenticated as the user see
// the change at their next command without locking, and the check on the
// command path is one atomic load and, for a user allowed everything (the
// default user, by default), one flag test.

// aclUser is one user; connections point at it for as long as they are
// authenticated as it.
type aclUser struct {
	name  string
	perms atomic.Pointer[aclPerms]
}

// aclPerms is a user's state: flags, password hashes and selectors, the
// first of which is the root selector.
type aclPerms struct {
	enabled, nopass bool
	// sanitize is "", "sanitize-payload" or "skip-sanitize-payload":
	// accepted and reported; lsmgo checks every RESTORE payload anyway.
	sanitize  string
	passwords []string // SHA-256 hex digests, in the order added
	selectors []*aclSelector
	// unrestricted: the root selector allows every command, key and
	// channel, so no check is needed.
	unrestricted bool
}

// aclSelector is a set of permissions: commands, key patterns, channel
// patterns. A command runs when any one of the user's selectors allows
// all of it.
type aclSelector struct {
	// allowed has one bit per command id.
	allowed []uint64
	// future records that the rules start from +@all (commands added
	// later are allowed); all that nothing was removed since, which lets
	// the check skip the bit test.
	future, all bool
	// firstArgs lists, per command id, the first arguments allowed for a
	// command whose bit is clear (+select|0).
	firstArgs map[int][]string
	allKeys   bool
	keys      []aclKeyPattern
	allChans  bool
	channels  []string
	// rules are the command rules applied since the last +@all or -@all,
	// each kept once, at its last position: ACL LIST shows them so.
	rules []string
}

type aclKeyPattern struct {
	pattern     string
	read, write bool
}

func newSelector(allChannels bool) *aclSelector {
	return &aclSelector{allowed: make([]uint64, (len(allCommands)+63)/64), allChans: allChannels}
}

func (s *aclSelector) clone() *aclSelector {
	c := *s
	c.allowed = slices.Clone(s.allowed)
	c.firstArgs = make(map[int][]string, len(s.firstArgs))
	for id, args := range s.firstArgs {
		c.firstArgs[id] = slices.Clone(args)
	}
	c.keys = slices.Clone(s.keys)
	c.channels = slices.Clone(s.channels)
	c.rules = slices.Clone(s.rules)
	return &c
}

func (p *aclPerms) clone() *aclPerms {
	c := *p
	c.passwords = slices.Clone(p.passwords)
	c.selectors = make([]*aclSelector, len(p.selectors))
	for i, s := range p.selectors {
		c.selectors[i] = s.clone()
	}
	return &c
}

// seal computes the derived fields of p, which is then never changed.
func (p *aclPerms) seal() *aclPerms {
	root := p.selectors[0]
	p.unrestricted = root.all && root.allKeys && root.allChans
	return p
}

func (s *aclSelector) allows(id int) bool { return s.allowed[id/64]&(1<<(id%64)) != 0 }

func (s *aclSelector) setBit(id int, on bool) {
	if on {
		s.allowed[id/64] |= 1 << (id % 64)
	} else {
		s.allowed[id/64] &^= 1 << (id % 64)
	}
	delete(s.firstArgs, id)
}

// passwordHash is how Redis stores a password: its SHA-256, in hex.
func passwordHash(pass []byte) string {
	sum := sha256.Sum256(pass)
	return hex.EncodeToString(sum[:])
}

// checkPassword reports whether pass opens p: any password for a nopass
// user, else one whose hash is listed, compared in constant time.
func (p *aclPerms) checkPassword(pass []byte) bool {
	if p.nopass {
		return true
	}
	h := []byte(passwordHash(pass))
	ok := false
	for _, stored := range p.passwords {
		if subtle.ConstantTimeCompare(h, []byte(stored)) == 1 {
			ok = true
		}
	}
	return ok
}

// aclUsers is the server's user registry.
type aclUsers struct {
	mu    sync.Mutex
	users map[string]*aclUser
	// byDefault is the default user, which cannot be deleted.
	byDefault *aclUser
	log       aclLog
}

// defaultPerms is the state Redis gives the default user: on, nopass,
// every command, key and channel.
func defaultPerms() *aclPerms {
	root := newSelector(true)
	root.allKeys = true
	root.applyCommandRule("+@all")
	return (&aclPerms{enabled: true, nopass: true, selectors: []*aclSelector{root}}).seal()
}

func (a *aclUsers) init(requirePass string) {
	a.users = map[string]*aclUser{}
	a.byDefault = &aclUser{name: "default"}
	a.byDefault.perms.Store(defaultPerms())
	a.users["default"] = a.byDefault
	a.setDefaultPassword(requirePass)
}

// setDefaultPassword is requirepass: the default user's only password,
// or nopass when empty.
func (a *aclUsers) setDefaultPassword(pass string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.byDefault.perms.Load().clone()
	p.passwords, p.nopass = nil, pass == ""
	if pass != "" {
		p.passwords = []string{passwordHash([]byte(pass))}
	}
	a.byDefault.perms.Store(p.seal())
}

func (a *aclUsers) get(name string) *aclUser {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.users[name]
}

// names returns the user names in order.
func (a *aclUsers) names() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sortedNames()
}

func (a *aclUsers) sortedNames() []string {
	names := make([]string, 0, len(a.users))
	for n := range a.users {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// authenticates reports whether a new connection starts authenticated
// as the default user: Redis does when it is on and nopass.
func (a *aclUsers) authenticates() bool {
	p := a.byDefault.perms.Load()
	return p.enabled && p.nopass
}

// describe writes p as ACL LIST does, after "user NAME ".
func (p *aclPerms) describe() string {
	var b strings.Builder
	if p.enabled {
		b.WriteString("on")
	} else {
		b.WriteString("off")
	}
	if p.nopass {
		b.WriteString(" nopass")
	}
	if p.sanitize != "" {
		b.WriteString(" " + p.sanitize)
	}
	for _, h := range p.passwords {
		b.WriteString(" #" + h)
	}
	b.WriteString(" " + p.selectors[0].describe())
	for _, s := range p.selectors[1:] {
		b.WriteString(" (" + s.describe() + ")")
	}
	return b.String()
}

// describe writes s's rules: keys, channels, commands.
func (s *aclSelector) describe() string {
	var parts []string
	if k := s.describeKeys(); k != "" {
		parts = append(parts, k)
	}
	if s.allChans {
		parts = append(parts, "&*")
	} else {
		parts = append(parts, "resetchannels")
		if c := s.describeChannels(); c != "" {
			parts = append(parts, c)
		}
	}
	parts = append(parts, s.describeCommands())
	return strings.Join(parts, " ")
}

func (s *aclSelector) describeKeys() string {
	if s.allKeys {
		return "~*"
	}
	var parts []string
	for _, k := range s.keys {
		switch {
		case k.read && k.write:
			parts = append(parts, "~"+k.pattern)
		case k.read:
			parts = append(parts, "%R~"+k.pattern)
		default:
			parts = append(parts, "%W~"+k.pattern)
		}
	}
	return strings.Join(parts, " ")
}

func (s *aclSelector) describeChannels() string {
	if s.allChans {
		return "&*"
	}
	var parts []string
	for _, c := range s.channels {
		parts = append(parts, "&"+c)
	}
	return strings.Join(parts, " ")
}

func (s *aclSelector) describeCommands() string {
	base := "-@all"
	if s.future {
		base = "+@all"
	}
	if len(s.rules) == 0 {
		return base
	}
	return base + " " + strings.Join(s.rules, " ")
}

// newUserPerms is a new user's state: off, no password, no command, key
// or channel (channels per acl-pubsub-default).
func newUserPerms(allChannels bool) *aclPerms {
	return &aclPerms{selectors: []*aclSelector{newSelector(allChannels)}}
}

// setUser creates or changes the user name by rules, all or none.
func (a *aclUsers) setUser(name string, rules []string, allChannels bool) error {
	rules, err := mergeSelectorArgs(rules)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.users[name]
	var p *aclPerms
	if u == nil {
		p = newUserPerms(allChannels)
	} else {
		p = u.perms.Load().clone()
	}
	for _, r := range rules {
		if err := p.apply(r, allChannels); err != nil {
			return err
		}
	}
	if u == nil {
		u = &aclUser{name: name}
		a.users[name] = u
	}
	u.perms.Store(p.seal())
	return nil
}

// delete deletes the named users that exist and returns them.
func (a *aclUsers) delete(names []string) []*aclUser {
	a.mu.Lock()
	defer a.mu.Unlock()
	var deleted []*aclUser
	for _, n := range names {
		if u := a.users[n]; u != nil && u != a.byDefault {
			deleted = append(deleted, u)
			delete(a.users, n)
		}
	}
	return deleted
}

// list returns ACL LIST's lines, by user name.
func (a *aclUsers) list() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	names := a.sortedNames()
	lines := make([]string, len(names))
	for i, n := range names {
		lines[i] = "user " + n + " " + a.users[n].perms.Load().describe()
	}
	return lines
}

// all returns every user.
func (a *aclUsers) all() []*aclUser {
	a.mu.Lock()
	defer a.mu.Unlock()
	users := make([]*aclUser, 0, len(a.users))
	for _, u := range a.users {
		users = append(users, u)
	}
	return users
}
