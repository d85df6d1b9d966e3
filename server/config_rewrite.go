package server

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// errNoConfigFile is Redis' answer to CONFIG REWRITE without a file.
var errNoConfigFile = errors.New("no config file")

// settingLine matches a line that assigns a top-level TOML key, bare or
// quoted; the file is a flat table, so every such line is a setting.
var settingLine = regexp.MustCompile(`^\s*(?:([A-Za-z0-9_-]+)|"([^"\\]*)"|'([^']*)')\s*=`)

// rewriteConfig writes the running settings into the config file: lines
// whose value already matches stay as they are, comments and order
// included; lines whose value differs are replaced in place; settings the
// file lacks and whose value differs from what the file would give are
// appended. Secrets are written as their values (it is the config file)
// and nothing here logs a value.
func (s *Server) rewriteConfig() error {
	path := s.base.ConfigFile
	if path == "" {
		return errNoConfigFile
	}
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if _, err := readConfigFile(path); err != nil {
		return err
	}
	cur := s.config()
	// Without an aclfile the users live in the config file, as Redis
	// writes them: all of them, default included, unless they are just
	// what a start without a user list gives.
	var users []string
	appendUsers := false
	if cur.ACLFile == "" {
		users = s.acl.userDirectives()
		var fresh aclUsers
		fresh.init(cur.RequirePass)
		appendUsers = !slices.Equal(users, fresh.userDirectives())
	}
	text, changed := rewriteConfigText(string(old), cur, &s.base, users, appendUsers)
	if changed == 0 {
		return nil
	}
	if err := writeFileAtomic(path, []byte(text)); err != nil {
		return err
	}
	// The watcher will see the new file; diffing against what it resolves
	// to now keeps that reload from touching anything.
	if next, err := s.base.resolve(); err == nil {
		s.fileCfg = next
	}
	s.log.Info("config file rewritten", "file", path, "changed", changed)
	return nil
}

// rewriteConfigText returns text with cur's settings written into it, and
// how many settings it had to write. base is the configuration before the
// file: a setting the file lacks is appended only if cur differs from what
// base and the rewritten file give it (which also skips the other name of
// an alias pair). users, when not nil, replace the file's user list,
// which is appended if the file lacks one and appendUsers is set.
func rewriteConfigText(text string, cur, base *Config, users []string, appendUsers bool) (string, int) {
	lines := strings.Split(text, "\n")
	probe := *base
	seen := map[string]bool{}
	changed := 0
	var out []string
	seenUsers := false
	for i := 0; i < len(lines); i++ {
		if end, have, ok := parseUsersLine(lines, i); ok {
			seenUsers = true
			if users == nil || slices.Equal(have, users) {
				out = append(out, lines[i:end+1]...)
			} else {
				out = append(out, tomlUsers(users))
				changed++
			}
			i = end
			continue
		}
		st, end, value, comment := parseSettingLine(lines, i)
		if st == nil {
			out = append(out, lines[i])
			continue
		}
		seen[st.name] = true
		want := st.get(cur)
		asFile := *base
		if st.set(&asFile, value) == nil && st.get(&asFile) == want {
			out = append(out, lines[i:end+1]...)
		} else {
			if comment == "" && strings.HasSuffix(lines[i], "\r") {
				comment = "\r" // keep the line's CRLF ending
			}
			out = append(out, tomlAssignment(st.name, want)+comment)
			changed++
		}
		_ = st.set(&probe, want)
		i = end
	}
	eol := "" // "\r" where the file ends its lines with CRLF
	if strings.Contains(text, "\r\n") {
		eol = "\r"
	}
	var appended []string
	for _, st := range settings {
		if st.fixed || seen[st.name] {
			continue
		}
		want := st.get(cur)
		if st.get(&probe) == want {
			continue
		}
		appended = append(appended, tomlAssignment(st.name, want)+eol)
		_ = st.set(&probe, want)
		changed++
	}
	if users != nil && !seenUsers && appendUsers {
		appended = append(appended, tomlUsers(users)+eol)
		changed++
	}
	if len(appended) > 0 {
		for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
			out = out[:len(out)-1]
		}
		out = append(out, appended...)
		out = append(out, "")
	}
	return strings.Join(out, "\n"), changed
}

// parseSettingLine reads the setting assigned at lines[i], if any: the
// setting, the last line its value spans (multi-line strings), the value
// as CONFIG SET would take it, and the comment that follows it on a
// one-line assignment (with its leading space), so a rewrite keeps it.
func parseSettingLine(lines []string, i int) (st *setting, end int, value, comment string) {
	m := settingLine.FindStringSubmatch(lines[i])
	if m == nil {
		return nil, 0, "", ""
	}
	st = lookupSetting(m[1] + m[2] + m[3])
	if st == nil || st.fixed {
		return nil, 0, "", ""
	}
	for end = i; end < len(lines); end++ {
		v, ok := decodeAssignment(strings.Join(lines[i:end+1], "\n"))
		if !ok {
			continue
		}
		if end == i {
			comment = trailingComment(lines[i])
		}
		return st, end, v, comment
	}
	return nil, 0, "", ""
}

// parseUsersLine reads the user list assigned at lines[i], if it is
// there: the last line it spans and its strings.
func parseUsersLine(lines []string, i int) (end int, users []string, ok bool) {
	if !userKeyLine.MatchString(lines[i]) {
		return 0, nil, false
	}
	for end = i; end < len(lines); end++ {
		var raw map[string]any
		doc := strings.ReplaceAll(strings.Join(lines[i:end+1], "\n"), "\r", "")
		if _, err := toml.Decode(doc, &raw); err != nil || len(raw) != 1 {
			continue
		}
		users, err := tomlStrings(raw["user"])
		return end, users, err == nil
	}
	return 0, nil, false
}

// tomlUsers spells the user list, a user a line.
func tomlUsers(users []string) string {
	var b strings.Builder
	b.WriteString("user = [\n")
	for _, u := range users {
		b.WriteString("  " + tomlString(u) + ",\n")
	}
	b.WriteString("]")
	return b.String()
}

// trailingComment returns the "# ..." ending line, with the blanks before
// it: the shortest prefix ending before a '#' that still decodes is the
// assignment, since a '#' inside a string cannot end it.
func trailingComment(line string) string {
	for j := strings.IndexByte(line, '#'); j >= 0; {
		if _, ok := decodeAssignment(line[:j]); ok {
			k := len(strings.TrimRight(line[:j], " \t"))
			return line[k:]
		}
		next := strings.IndexByte(line[j+1:], '#')
		if next < 0 {
			break
		}
		j += 1 + next
	}
	return ""
}

// decodeAssignment decodes one "key = value" document into the string
// CONFIG SET would take, as readConfigFile does.
func decodeAssignment(doc string) (string, bool) {
	var raw map[string]any
	doc = strings.TrimSuffix(strings.ReplaceAll(doc, "\r\n", "\n"), "\r")
	if _, err := toml.Decode(doc, &raw); err != nil || len(raw) != 1 {
		return "", false
	}
	for _, v := range raw {
		return tomlSettingValue(v)
	}
	return "", false
}

// tomlAssignment spells name = value: an integer when the value reads
// back as the same string, a TOML string otherwise.
func tomlAssignment(name, value string) string {
	if n, err := strconv.ParseInt(value, 10, 64); err == nil && strconv.FormatInt(n, 10) == value {
		return name + " = " + value
	}
	return name + " = " + tomlString(value)
}

// tomlString spells s as a TOML string.
func tomlString(s string) string {
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(map[string]string{"s": s}); err != nil {
		// Encoding a string cannot fail; quote it plainly if it ever does.
		return strconv.Quote(s)
	}
	return strings.TrimPrefix(strings.TrimRight(b.String(), "\n"), "s = ")
}

// writeFileAtomic replaces path with data so that a crash leaves either
// the old file or the new one: a temporary file in the same directory,
// synced, renamed over path, then the directory synced so that the rename
// itself is durable. The new file keeps the old one's permissions.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".rewrite-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if info, statErr := os.Stat(path); statErr == nil {
		if err = tmp.Chmod(info.Mode().Perm()); err != nil {
			return err
		}
	}
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
