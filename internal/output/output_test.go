package output

import (
	"bytes"
	"strings"
	"testing"
)

// Every command reads its --format through Parse: a name in any case, a did-you-mean for a typo,
// and the list of what the command offers when nothing is near.
func TestParse(t *testing.T) {
	offered := []Format{Text, JSON, SARIF, GitHub}
	for _, f := range offered {
		if got, err := Parse(string(f), offered...); err != nil || got != f {
			t.Errorf("Parse(%q) = %v, %v", f, got, err)
		}
	}
	if f, err := Parse("SARIF", offered...); err != nil || f != SARIF {
		t.Errorf("Parse(SARIF) = %v, %v", f, err)
	}
	if _, err := Parse("sarf", offered...); err == nil || !strings.Contains(err.Error(), "did you mean sarif") {
		t.Errorf("Parse(sarf) = %v, want a did-you-mean sarif", err)
	}
	if _, err := Parse("xml", offered...); err == nil || !strings.Contains(err.Error(), "text, json, sarif, github") {
		t.Errorf("Parse(xml) = %v, want the list of formats", err)
	}
	if _, err := Parse("markdown", offered...); err == nil {
		t.Error("a format the command does not offer was taken")
	}
}

// WriteJSON writes `>` as itself and keeps a CI runner from reading a workflow command in a
// value, while the JSON still decodes to what was written.
func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, map[string]string{"subject": "_INBOX.x.>", "name": "##[error]forged"}); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	if !strings.Contains(got, `"_INBOX.x.>"`) || strings.Contains(got, "##[") || !strings.HasSuffix(got, "}\n") {
		t.Errorf("WriteJSON wrote %q", got)
	}
}
