package resp

// splitInline splits an inline command line into arguments the way Redis'
// sdssplitargs does, appending them to args. Arguments are separated by
// whitespace; "double quotes" understand \n \r \t \b \a \xHH and \<any>,
// 'single quotes' understand only \'; a closing quote must be followed by
// whitespace or the end of the line; quotes may open in the middle of a
// word ("ab"cd"" is one argument). It reports false for an unterminated
// quote or a closing quote followed by another character.
//
// Unescaping happens in place: an argument never outgrows the bytes it was
// read from, so the result aliases line and nothing is allocated. The one
// deliberate difference from Redis: sdssplitargs works on a C string and
// stops at a NUL byte (and Redis' line search does too, so such a request
// waits until "too big inline request"); here NUL is an ordinary byte.
func splitInline(line []byte, args [][]byte) ([][]byte, bool) {
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return args, true
		}
		start, out := i, i
		var quote byte // 0, '"' or '\''
	word:
		for {
			if i == len(line) {
				if quote != 0 {
					return nil, false
				}
				break
			}
			c := line[i]
			switch {
			case quote == '"' && c == '\\' && i+3 < len(line) && line[i+1] == 'x' &&
				isHex(line[i+2]) && isHex(line[i+3]):
				c = unhex(line[i+2])<<4 | unhex(line[i+3])
				i += 3
			case quote == '"' && c == '\\' && i+1 < len(line):
				i++
				c = unescape(line[i])
			case quote == '\'' && c == '\\' && i+1 < len(line) && line[i+1] == '\'':
				i++
				c = '\''
			case quote != 0 && c == quote:
				if i+1 < len(line) && !isSpace(line[i+1]) {
					return nil, false
				}
				i++
				break word
			case quote == 0 && (c == ' ' || c == '\n' || c == '\r' || c == '\t'):
				i++
				break word
			case quote == 0 && (c == '"' || c == '\''):
				quote = c
				i++
				continue
			}
			line[out] = c
			out++
			i++
		}
		args = append(args, line[start:out:out])
	}
}

// isSpace is C's isspace in the "C" locale, which sdssplitargs uses to skip
// between arguments and to accept what follows a closing quote.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// unescape maps the character after a backslash inside double quotes.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}
