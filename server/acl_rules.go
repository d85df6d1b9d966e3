package server

import (
	"strings"
)

// ACL SETUSER's rules, applied to a copy of a user's state (aclPerms)
// that replaces the user's only when every rule applied.

// Redis' reasons for refusing a rule, which it puts after
// "Error in ACL SETUSER modifier '<rule>': ".
const (
	errACLUnknown       = "Unknown command or category name in ACL"
	errACLSyntax        = "Syntax error"
	errACLKeysAfterAll  = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
	errACLChansAfterAll = "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
	errACLNoSuchPass    = "The password you are trying to remove from the user does not exist"
	errACLBadHash       = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
	errACLSubFirstArg   = "Allowing first-arg of a subcommand is not supported"
)

// aclRuleError is a rule that could not apply, and why.
type aclRuleError struct{ rule, reason string }

func (e *aclRuleError) Error() string {
	return "ERR Error in ACL SETUSER modifier '" + e.rule + "': " + e.reason
}

// mergeSelectorArgs joins the arguments of a selector that spans several
// ("(+get" "~k*)") into one, as Redis does.
func mergeSelectorArgs(args []string) ([]string, error) {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "(") || strings.HasSuffix(a, ")") {
			out = append(out, a)
			continue
		}
		j := i
		for j < len(args) && !strings.HasSuffix(args[j], ")") {
			j++
		}
		if j == len(args) {
			return nil, redisError("ERR Unmatched parenthesis in acl selector starting at '" + a + "'.")
		}
		out = append(out, strings.Join(args[i:j+1], " "))
		i = j
	}
	return out, nil
}

// apply applies one rule to p; allChannels is acl-pubsub-default, the
// channels a new or reset selector starts with.
func (p *aclPerms) apply(rule string, allChannels bool) error {
	fail := func(reason string) error { return &aclRuleError{rule, reason} }
	switch lower := strings.ToLower(rule); {
	case lower == "on":
		p.enabled = true
	case lower == "off":
		p.enabled = false
	case lower == "nopass":
		p.nopass, p.passwords = true, nil
	case lower == "resetpass":
		p.nopass, p.passwords = false, nil
	case lower == "sanitize-payload" || lower == "skip-sanitize-payload":
		p.sanitize = lower
	case lower == "clearselectors":
		p.selectors = p.selectors[:1]
	case lower == "reset":
		p.nopass, p.passwords, p.enabled = false, nil, false
		p.sanitize = "sanitize-payload"
		p.selectors = []*aclSelector{newSelector(allChannels)}
	case rule == "":
		return fail(errACLSyntax)
	case rule[0] == '>' || rule[0] == '<':
		h := passwordHash([]byte(rule[1:]))
		return p.changePassword(rule[0] == '>', h, fail)
	case rule[0] == '#' || rule[0] == '!':
		h := rule[1:]
		if !isPasswordHash(h) {
			return fail(errACLBadHash)
		}
		return p.changePassword(rule[0] == '#', h, fail)
	case rule[0] == '(' && rule[len(rule)-1] == ')':
		sel := newSelector(allChannels)
		for r := range strings.FieldsSeq(rule[1 : len(rule)-1]) {
			if err := sel.apply(r); err != nil {
				return fail(err.Error())
			}
		}
		p.selectors = append(p.selectors, sel)
	default:
		if err := p.selectors[0].apply(rule); err != nil {
			return fail(err.Error())
		}
	}
	return nil
}

func (p *aclPerms) changePassword(add bool, hash string, fail func(string) error) error {
	i := -1
	for j, h := range p.passwords {
		if h == hash {
			i = j
		}
	}
	switch {
	case add && i < 0:
		p.passwords = append(p.passwords, hash)
	case !add && i < 0:
		return fail(errACLNoSuchPass)
	case !add:
		p.passwords = append(p.passwords[:i], p.passwords[i+1:]...)
	}
	if add {
		p.nopass = false
	}
	return nil
}

func isPasswordHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// selectorError is a rule a selector refused; aclPerms.apply names the
// whole rule in the reply.
type selectorError string

func (e selectorError) Error() string { return string(e) }

// apply applies one selector rule: keys, channels or commands.
func (s *aclSelector) apply(rule string) error {
	switch lower := strings.ToLower(rule); {
	case lower == "allkeys" || rule == "~*":
		s.allKeys, s.keys = true, nil
	case lower == "resetkeys":
		s.allKeys, s.keys = false, nil
	case lower == "allchannels" || rule == "&*":
		s.allChans, s.channels = true, nil
	case lower == "resetchannels":
		s.allChans, s.channels = false, nil
	case lower == "allcommands":
		s.applyCommandRule("+@all")
	case lower == "nocommands":
		s.applyCommandRule("-@all")
	case rule[0] == '~' || rule[0] == '%':
		return s.addKeyPattern(rule)
	case rule[0] == '&':
		if s.allChans {
			return selectorError(errACLChansAfterAll)
		}
		if ch := rule[1:]; !containsString(s.channels, ch) {
			s.channels = append(s.channels, ch)
		}
	case rule[0] == '+' || rule[0] == '-':
		return s.applyCommandRule(rule)
	default:
		return selectorError(errACLSyntax)
	}
	return nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// addKeyPattern adds ~pattern, or %R~, %W~, %RW~pattern with those
// permissions; a pattern already there gains the new permissions. Only
// ~* itself means allkeys: %RW~* is a pattern, as in Redis.
func (s *aclSelector) addKeyPattern(rule string) error {
	if s.allKeys {
		return selectorError(errACLKeysAfterAll)
	}
	read, write := true, true
	pattern := rule[1:]
	if rule[0] == '%' {
		flags, rest, ok := strings.Cut(rule[1:], "~")
		if !ok || flags == "" {
			return selectorError(errACLSyntax)
		}
		read, write = false, false
		for _, f := range strings.ToUpper(flags) {
			switch f {
			case 'R':
				read = true
			case 'W':
				write = true
			default:
				return selectorError(errACLSyntax)
			}
		}
		pattern = rest
	}
	for i := range s.keys {
		if s.keys[i].pattern == pattern {
			s.keys[i].read = s.keys[i].read || read
			s.keys[i].write = s.keys[i].write || write
			return nil
		}
	}
	s.keys = append(s.keys, aclKeyPattern{pattern: pattern, read: read, write: write})
	return nil
}

// applyCommandRule applies +/-command, +/-command|sub, +command|firstarg
// or +/-@category.
func (s *aclSelector) applyCommandRule(rule string) error {
	allow := rule[0] == '+'
	name := strings.ToLower(rule[1:])
	if !allow {
		s.all = false
	}
	switch {
	case name == "@all":
		for i := range s.allowed {
			s.allowed[i] = 0
			if allow {
				s.allowed[i] = ^uint64(0)
			}
		}
		s.future, s.all = allow, allow
		s.firstArgs, s.rules = nil, nil
		return nil
	case strings.HasPrefix(name, "@"):
		cat, ok := aclCategory(name[1:])
		if !ok {
			return selectorError(errACLUnknown)
		}
		for _, cmd := range allCommands {
			if cmd.acl.cats&cat != 0 {
				s.setBit(cmd.id, allow)
			}
		}
	default:
		if err := s.applyCommand(name, allow); err != nil {
			return err
		}
	}
	s.noteRule(rule[:1] + name)
	return nil
}

func (s *aclSelector) applyCommand(name string, allow bool) error {
	if cmd := lookupFullName(name); cmd != nil {
		s.setCommand(cmd, allow)
		return nil
	}
	if _, ok := aclTable[name]; ok {
		// A Redis command lsmgo lacks: a rule Redis accepts, and one
		// that has nothing to allow or deny here.
		return nil
	}
	bar := strings.LastIndexByte(name, '|')
	if bar < 0 || !allow {
		return selectorError(errACLUnknown)
	}
	base, first := name[:bar], name[bar+1:]
	cmd := lookupFullName(base)
	if _, ok := aclTable[base]; ok && cmd == nil && first != "" && !strings.Contains(base, "|") {
		return nil
	}
	switch {
	case cmd == nil:
		return selectorError(errACLUnknown)
	case cmd.parent != nil:
		return selectorError(errACLSubFirstArg)
	case first == "":
		return selectorError(errACLSyntax)
	case cmd.subs != nil:
		return selectorError(errACLUnknown)
	}
	if !containsString(s.firstArgs[cmd.id], first) {
		if s.firstArgs == nil {
			s.firstArgs = map[int][]string{}
		}
		s.firstArgs[cmd.id] = append(s.firstArgs[cmd.id], first)
	}
	return nil
}

// setCommand allows or denies cmd and all its subcommands.
func (s *aclSelector) setCommand(cmd *command, allow bool) {
	s.setBit(cmd.id, allow)
	for _, sub := range cmd.subs {
		s.setBit(sub.id, allow)
	}
}

// noteRule appends rule to the rules ACL LIST shows, dropping the
// earlier ones it overrides wholly: the same name with either sign and,
// for a command, its subcommand and first-argument rules. Replaying the
// rules kept, in order, gives the same permissions.
func (s *aclSelector) noteRule(rule string) {
	name := rule[1:]
	wholeCommand := name[0] != '@' && !strings.Contains(name, "|")
	kept := s.rules[:0]
	for _, r := range s.rules {
		if n := r[1:]; n == name || wholeCommand && strings.HasPrefix(n, name+"|") {
			continue
		}
		kept = append(kept, r)
	}
	s.rules = append(kept, rule)
}

// lookupFullName finds a command or subcommand by its full name
// ("config|get").
func lookupFullName(name string) *command {
	base, sub, isSub := strings.Cut(name, "|")
	cmd := commands[base]
	if !isSub || cmd == nil {
		return cmd
	}
	return cmd.subs[sub]
}
