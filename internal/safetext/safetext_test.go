package safetext

import "testing"

func TestLineEscapesWhatALogOrTerminalWouldObey(t *testing.T) {
	for in, want := range map[string]string{
		"EVENTS":          "EVENTS",
		"a\nb":            `a\nb`,
		"\x1b[1A":         `\x1b[1A`,
		"##[error]x":      `#\x23[error]x`,
		"bad\xff":         `bad\xff`,
		"\u009b":          `\u009b`,
		"ünïcode # fine":  "ünïcode # fine",
		"line\u2028sep":   `line\u2028sep`,
		"tab\tseparated":  `tab\tseparated`,
		"mesh.mod.*.>":    "mesh.mod.*.>",
		"#not a command[": "#not a command[",
	} {
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
	}
	if got := string(JSON([]byte(`{"a": "##[x]` + "\u009b\x7f" + `"}`))); got != `{"a": "##\u005bx]\u009b\u007f"}` {
		t.Errorf("JSON: %s", got)
	}
}
