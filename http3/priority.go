package http3

import "strings"

// Extensible priorities (RFC 9218). A request's Priority header field is
// a Structured Field Dictionary (RFC 8941 section 3.2) whose u (urgency,
// an Integer 0..7, default 3) and i (incremental, a Boolean, default
// false) members the server applies to the response stream
// (quic.Stream.SetPriority). Unknown members, parameters, out-of-range
// values and values of another type are ignored (RFC 9218 section 4); a
// field value that does not parse as a Dictionary is ignored whole (RFC
// 8941 section 4.2), leaving the defaults.

// defaultUrgency is RFC 9218's default urgency (section 4.1).
const defaultUrgency = 3

// maxPriorityFieldLen bounds the Priority field value parsed; a longer
// one is ignored (RFC 8941 section 3 lets parsers limit sizes).
const maxPriorityFieldLen = 1024

// parsePriority returns the urgency and incremental flag of the Priority
// field lines values (combined as RFC 8941 section 4.2 says: joined with
// commas).
func parsePriority(values []string) (urgency int8, incremental bool) {
	urgency = defaultUrgency
	v := strings.Join(values, ",")
	if len(v) > maxPriorityFieldLen {
		return defaultUrgency, false
	}
	p := sfParser{s: v}
	u, i := int64(defaultUrgency), false
	ok := p.dictionary(func(key string, it sfItem) {
		switch key {
		case "u":
			if it.kind == sfInteger && it.n >= 0 && it.n <= 7 {
				u = it.n
			}
		case "i":
			if it.kind == sfBoolean {
				i = it.b
			}
		}
	})
	if !ok {
		return defaultUrgency, false
	}
	return int8(u), i
}

// sfKind is the type of a Structured Field item.
type sfKind uint8

const (
	sfOther   sfKind = iota // a type we do not interpret (string, token, ...)
	sfInteger               // n
	sfBoolean               // b
)

// sfItem is the value of a dictionary member, reduced to what priorities
// need.
type sfItem struct {
	kind sfKind
	n    int64
	b    bool
}

// sfParser parses RFC 8941 Dictionaries: enough of the grammar to accept
// every valid field and refuse invalid ones, keeping only integer and
// boolean values.
type sfParser struct {
	s string
	i int
}

func (p *sfParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *sfParser) skipSP() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *sfParser) skipOWS() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// dictionary parses the whole input (RFC 8941 section 4.2.2), calling f
// with each member's key and value; a later member with the same key
// overrides an earlier one, as f sees them in order. It reports whether
// the input is a valid Dictionary.
func (p *sfParser) dictionary(f func(string, sfItem)) bool {
	p.skipSP()
	if p.i == len(p.s) {
		return true // an empty field: no members
	}
	for {
		key, ok := p.key()
		if !ok {
			return false
		}
		it := sfItem{kind: sfBoolean, b: true} // a bare key is true
		if p.peek() == '=' {
			p.i++
			if p.peek() == '(' {
				if !p.innerList() {
					return false
				}
				it = sfItem{}
			} else if it, ok = p.bareItem(); !ok {
				return false
			}
		}
		if !p.parameters() {
			return false
		}
		f(key, it)
		p.skipOWS()
		if p.i == len(p.s) {
			return true
		}
		if p.s[p.i] != ',' {
			return false
		}
		p.i++
		p.skipOWS()
		if p.i == len(p.s) {
			return false // a trailing comma
		}
	}
}

func isLCAlpha(c byte) bool { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool   { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool   { return isLCAlpha(c) || c >= 'A' && c <= 'Z' }

// key parses a key: lcalpha or "*", then lcalpha, digits, "_-.*".
func (p *sfParser) key() (string, bool) {
	start := p.i
	if c := p.peek(); !isLCAlpha(c) && c != '*' {
		return "", false
	}
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		if !isLCAlpha(c) && !isDigit(c) && !strings.ContainsRune("_-.*", rune(c)) {
			break
		}
		p.i++
	}
	return p.s[start:p.i], true
}

// parameters parses ";key[=bare-item]" parameters, which priorities
// ignore.
func (p *sfParser) parameters() bool {
	for p.peek() == ';' {
		p.i++
		p.skipSP()
		if _, ok := p.key(); !ok {
			return false
		}
		if p.peek() == '=' {
			p.i++
			if _, ok := p.bareItem(); !ok {
				return false
			}
		}
	}
	return true
}

// innerList parses "(" items with parameters ")" and its parameters.
func (p *sfParser) innerList() bool {
	p.i++ // "("
	for {
		p.skipSP()
		if p.peek() == ')' {
			p.i++
			return p.parameters()
		}
		if _, ok := p.bareItem(); !ok || !p.parameters() {
			return false
		}
		if c := p.peek(); c != ' ' && c != ')' {
			return false
		}
	}
}

// bareItem parses an Integer, Decimal, String, Token, Byte Sequence or
// Boolean (RFC 8941 section 4.2.3.1).
func (p *sfParser) bareItem() (sfItem, bool) {
	c := p.peek()
	switch {
	case c == '-' || isDigit(c):
		return p.number()
	case c == '"':
		return sfItem{}, p.str()
	case c == '*' || isAlpha(c):
		p.token()
		return sfItem{}, true
	case c == ':':
		return sfItem{}, p.byteSequence()
	case c == '?':
		if p.i+1 < len(p.s) && (p.s[p.i+1] == '0' || p.s[p.i+1] == '1') {
			b := p.s[p.i+1] == '1'
			p.i += 2
			return sfItem{kind: sfBoolean, b: b}, true
		}
	}
	return sfItem{}, false
}

// number parses an Integer (at most 15 digits) or a Decimal (at most 12
// integer and 3 fraction digits).
func (p *sfParser) number() (sfItem, bool) {
	neg := p.peek() == '-'
	if neg {
		p.i++
	}
	var n int64
	digits, frac, decimal := 0, 0, false
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case isDigit(c):
			if decimal {
				frac++
			} else {
				digits++
				n = n*10 + int64(c-'0')
			}
		case c == '.' && !decimal && digits > 0:
			if digits > 12 {
				return sfItem{}, false
			}
			decimal = true
		default:
			goto end
		}
		if digits > 15 || frac > 3 {
			return sfItem{}, false
		}
		p.i++
	}
end:
	if digits == 0 || decimal && frac == 0 {
		return sfItem{}, false
	}
	if decimal {
		return sfItem{}, true
	}
	if neg {
		n = -n
	}
	return sfItem{kind: sfInteger, n: n}, true
}

// str parses a String: printable ASCII in quotes, with \" and \\.
func (p *sfParser) str() bool {
	p.i++ // opening quote
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '"':
			return true
		case c == '\\':
			if p.i == len(p.s) || p.s[p.i] != '"' && p.s[p.i] != '\\' {
				return false
			}
			p.i++
		case c < 0x20 || c > 0x7e:
			return false
		}
	}
	return false // unterminated
}

// token parses a Token: tchar, ":" and "/" after the first character.
func (p *sfParser) token() {
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		if !isAlpha(c) && !isDigit(c) && !strings.ContainsRune("!#$%&'*+-.^_`|~:/", rune(c)) {
			return
		}
		p.i++
	}
}

// byteSequence parses ":base64:".
func (p *sfParser) byteSequence() bool {
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == ':':
			return true
		case isAlpha(c) || isDigit(c) || c == '+' || c == '/' || c == '=':
		default:
			return false
		}
	}
	return false
}
