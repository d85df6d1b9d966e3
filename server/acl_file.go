package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The ACL file ("aclfile"), in Redis' format: one "user NAME RULES..."
// line per user, as ACL LIST prints them. Users persist only through it,
// as in Redis: ACL SAVE writes it, ACL LOAD and the start read it.

// loadFile replaces the users with those of path, all or none, and
// returns the users that are gone. Users that stay keep their identity,
// so their connections stay authenticated with the new rules; the
// default user, if the file lacks it, gets Redis' defaults. An empty path
// loads nothing.
func (a *aclUsers) loadFile(path string, allChannels bool) ([]*aclUser, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("Error loading ACLs, opening file '%s': %v", path, errors.Unwrap(err))
	}
	loaded := map[string]*aclPerms{}
	var problems []string
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if err := loadLine(line, loaded, allChannels); err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %s", path, i+1, err))
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, ". "))
	}
	if loaded["default"] == nil {
		loaded["default"] = defaultPerms()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var gone []*aclUser
	for name, u := range a.users {
		if loaded[name] == nil {
			gone = append(gone, u)
			delete(a.users, name)
		}
	}
	for name, p := range loaded {
		u := a.users[name]
		if u == nil {
			u = &aclUser{name: name}
			a.users[name] = u
		}
		u.perms.Store(p.seal())
	}
	return gone, nil
}

// loadLine parses one user line into loaded.
func loadLine(line string, loaded map[string]*aclPerms, allChannels bool) error {
	fields := strings.Fields(line)
	if fields[0] != "user" || len(fields) < 2 {
		return errors.New("should start with user keyword followed by the username")
	}
	name := fields[1]
	if loaded[name] != nil {
		return errors.New("Duplicate user '" + name + "' found")
	}
	p, err := parseUserRules(fields[2:], allChannels)
	if err != nil {
		var re *aclRuleError
		if errors.As(err, &re) {
			return errors.New("Error in applying operation '" + re.rule + "': " + re.reason)
		}
		return errors.New(strings.TrimPrefix(err.Error(), "ERR "))
	}
	loaded[name] = p
	return nil
}

// saveFile writes every user to path, through a temporary file renamed
// over it, so that a crash leaves the old file or the new one.
func (a *aclUsers) saveFile(path string) error {
	var b strings.Builder
	for _, l := range a.list() {
		b.WriteString(l + "\n")
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".acl-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(b.String()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func cmdACLLoad(c *conn, _ *command, _ [][]byte) error {
	path := c.s.config().ACLFile
	if path == "" {
		return redisError("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.")
	}
	gone, err := c.s.acl.loadFile(path, c.s.config().ACLPubsubDefault == "allchannels")
	if err != nil {
		return redisError("ERR " + err.Error())
	}
	c.s.disconnectUsers(c, gone)
	c.s.closeRevokedSubscribers(c, c.s.acl.all()...)
	c.ok()
	return nil
}

func cmdACLSave(c *conn, _ *command, _ [][]byte) error {
	path := c.s.config().ACLFile
	if path == "" {
		return redisError("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.")
	}
	if err := c.s.acl.saveFile(path); err != nil {
		c.s.log.Warn("ACL SAVE failed", "path", path, "err", err)
		return redisError("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
	}
	c.ok()
	return nil
}
