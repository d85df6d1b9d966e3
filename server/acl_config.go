package server

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The config file's users: Redis' `user NAME RULES...` directive, spelled
// in lsmgo's TOML file as
//
//	user = ["alice on >secret ~app:* +@all", "default off"]
//
// one string per user, its name then its rules, read by the same parser
// as ACL SETUSER and the aclfile. As in Redis, they are read at the start
// only, cannot be combined with an aclfile, and CONFIG REWRITE writes the
// running users back as this list.

const errUsersAndACLFile = "Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both."

// parseConfigUsers parses user directives into each user's permissions.
// origins, when given, names where each directive came from (file and
// line), for the error.
func parseConfigUsers(users, origins []string, allChannels bool) (map[string]*aclPerms, error) {
	loaded := map[string]*aclPerms{}
	for i, u := range users {
		origin := "user"
		if i < len(origins) {
			origin = origins[i] + ": user"
		}
		if err := parseConfigUser(u, loaded, allChannels); err != nil {
			return nil, fmt.Errorf("%s %q: %w", origin, u, err)
		}
	}
	return loaded, nil
}

// parseConfigUser parses one "NAME RULES..." directive into loaded, with
// Redis' errors for the config file.
func parseConfigUser(directive string, loaded map[string]*aclPerms, allChannels bool) error {
	fields := strings.Fields(directive)
	if len(fields) == 0 {
		return errors.New("Error in user declaration: a user name is needed")
	}
	name := fields[0]
	if loaded[name] != nil {
		return fmt.Errorf("Error in user declaration '%s': Duplicate user found. A user can only be defined once in config files", name)
	}
	rules := fields[1:]
	if name == "default" {
		// Redis resets the default user before applying its directive.
		rules = append([]string{"reset"}, rules...)
	}
	p, err := parseUserRules(rules, allChannels)
	if err != nil {
		var re *aclRuleError
		if errors.As(err, &re) {
			return fmt.Errorf("Error in user declaration '%s': %s", re.rule, re.reason)
		}
		return fmt.Errorf("Error in user declaration '%s': %s", name, strings.TrimPrefix(err.Error(), "ERR "))
	}
	loaded[name] = p
	return nil
}

// parseUserRules applies rules to a new user, as a user line of the
// aclfile or the config file describes one.
func parseUserRules(rules []string, allChannels bool) (*aclPerms, error) {
	rules, err := mergeSelectorArgs(rules)
	if err != nil {
		return nil, err
	}
	p := newUserPerms(allChannels)
	for _, r := range rules {
		if err := p.apply(r, allChannels); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// addConfigUsers installs the config file's users at the start, over the
// default user (whose requirepass password a `default` directive
// replaces, since Redis resets that user before applying its rules).
func (a *aclUsers) addConfigUsers(loaded map[string]*aclPerms) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for name, p := range loaded {
		u := a.users[name]
		if u == nil {
			u = &aclUser{name: name}
			a.users[name] = u
		}
		u.perms.Store(p.seal())
	}
}

// userDirectives returns the running users as the config file's user
// list: ACL LIST's lines without their "user " word.
func (a *aclUsers) userDirectives() []string {
	lines := a.list()
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "user ")
	}
	return lines
}

// userLines finds the line of each of users, the values of the `user` key
// of text: each string where it is written out whole after the key (as a
// TOML basic or literal string), else the line of the one before it or
// of the key.
func userLines(text string, users []string) []int {
	out := make([]int, len(users))
	pos := 0
	if loc := userKeyLine.FindStringIndex(text); loc != nil {
		pos = loc[0]
	}
	line := 1 + strings.Count(text[:pos], "\n")
	for k, u := range users {
		for _, quoted := range []string{strconv.Quote(u), "'" + u + "'"} {
			if i := strings.Index(text[pos:], quoted); i >= 0 {
				line += strings.Count(text[pos:pos+i], "\n")
				pos += i + len(quoted)
				break
			}
		}
		out[k] = line
	}
	return out
}

// userKeyLine matches the line that assigns the `user` key.
var userKeyLine = regexp.MustCompile(`(?m)^\s*(?:user|"user"|'user')\s*=`)
