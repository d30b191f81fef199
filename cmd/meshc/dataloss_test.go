package main

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/meshc-dev/meshc/apply"
)

// docs/commands.md's "never loses data quietly" lists every flag that can lose data, and nothing
// else can: each permission apply.Options has (a bool) is one flag of `meshc apply`, listed in
// the page's table, and the table lists nothing else.
func TestTheCommandsPageListsEveryFlagThatCanLoseData(t *testing.T) {
	t.Parallel()
	var want []string
	typ := reflect.TypeOf(apply.Options{})
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Type.Kind() == reflect.Bool {
			want = append(want, kebab(f.Name))
		}
	}
	page, err := os.ReadFile("../../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(page), "<!-- data-loss flags: read by TestTheCommandsPageListsEveryFlagThatCanLoseData -->")
	if !ok {
		t.Fatal("docs/commands.md has no data-loss table")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^\\| `--([a-z-]+)` \\|").FindAllStringSubmatch(table, -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(want)
	slices.Sort(listed)
	if !slices.Equal(want, listed) {
		t.Fatalf("docs/commands.md lists %q as the flags that can lose data; apply.Options permits %q", listed, want)
	}
	help := helpOf(t, "apply")
	for _, flag := range want {
		if !strings.Contains(help, "\n  --"+flag+" ") {
			t.Errorf("--%s is not a flag meshc apply's help lists", flag)
		}
	}
}

// kebab is AllowReplace as allow-replace.
func kebab(name string) string {
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
