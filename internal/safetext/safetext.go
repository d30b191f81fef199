// Package safetext makes text that came from outside meshc — a catalogue's values and paths, the
// names a live bus reports — safe to print where a person or a CI runner reads it: one line, no
// escape sequence that moves a terminal's cursor, no workflow command a runner would obey.
package safetext

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line writes control characters (a newline that would start a forged line, an escape sequence
// that rewrites the screen) and bytes that are not UTF-8 as Go escapes (\n, \x1b, \xff), and
// "##[" — the Actions runner's older workflow-command prefix, which it finds anywhere in a
// line — as "#\x23[". Everything else is left as written.
func Line(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '#' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return strings.ReplaceAll(b.String(), "##[", `#\x23[`)
}

// JSON makes encoded JSON safe in a CI log without changing what it decodes to: "##[" inside a
// string becomes "##\u005b", and the C1 controls and DEL, which encoding/json leaves raw, become
// \u escapes. JSON has no "##[" outside a string, and encoding/json escapes the C0 controls.
func JSON(b []byte) []byte {
	var out bytes.Buffer
	out.Grow(len(b))
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			fmt.Fprintf(&out, `\u%04x`, r)
		} else {
			out.Write(b[i : i+size])
		}
		i += size
	}
	return bytes.ReplaceAll(out.Bytes(), []byte("##["), []byte(`##\u005b`))
}
