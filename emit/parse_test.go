package emit

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/conf"

	"github.com/meshc-dev/meshc/compiler"
)

// parsedUsers parses accounts.conf with the server's own parser and returns the users of its one
// account, failing if the file holds anything else.
func parsedUsers(t testing.TB, out []byte, account string) []map[string]any {
	t.Helper()
	m, err := conf.Parse(string(out))
	if err != nil {
		t.Fatalf("the server's parser refuses accounts.conf: %v\n%s", err, out)
	}
	if len(m) != 1 || m["accounts"] == nil {
		t.Fatalf("top level holds %v, want only accounts\n%s", keys(m), out)
	}
	accounts, _ := m["accounts"].(map[string]any)
	if len(accounts) != 1 || accounts[account] == nil {
		t.Fatalf("accounts holds %v, want only %q\n%s", keys(accounts), account, out)
	}
	acc, _ := accounts[account].(map[string]any)
	if len(acc) != 2 || acc["jetstream"] != "enabled" {
		t.Fatalf("account holds %v, want jetstream: enabled and users\n%s", acc, out)
	}
	list, ok := acc["users"].([]any)
	if !ok {
		t.Fatalf("users is %T, want a list\n%s", acc["users"], out)
	}
	users := make([]map[string]any, len(list))
	for i, u := range list {
		if users[i], ok = u.(map[string]any); !ok {
			t.Fatalf("user %d is %T, want a map\n%s", i, u, out)
		}
	}
	return users
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// wantUser is what a parsed user must be, exactly, for u: no key more or less.
func wantUser(u compiler.User) map[string]any {
	perm := func(p compiler.Permission) map[string]any {
		m := map[string]any{}
		if len(p.Allow) > 0 {
			m["allow"] = strs(p.Allow)
		}
		if len(p.Deny) > 0 {
			m["deny"] = strs(p.Deny)
		}
		return m
	}
	perms := map[string]any{"publish": perm(u.Publish), "subscribe": perm(u.Subscribe)}
	if u.AllowResponses {
		perms["allow_responses"] = true
	}
	return map[string]any{"user": u.Name, "password": u.Hash, "permissions": perms}
}

func strs(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// roundTrip renders a plan whose strings are arbitrary and checks the server's parser reads back
// exactly those strings: no name, subject or hash can end a value, open a block or comment out
// the rest of a line. A user without a hash (left out under AllowMissing, named in a comment) is
// in the plan too, so a comment cannot be broken out of either.
func roundTrip(t testing.TB, name, subject, hashTail string) {
	t.Helper()
	hash := "$2a$04$" + hashTail
	if n := len(hashTail); n < 53 {
		hash += strings.Repeat(".", 53-n) // bcrypt.Cost wants at least a hash's length
	}
	p := &compiler.Plan{Account: "ACC", Users: []compiler.User{
		{Name: name, Hash: hash,
			Publish:        compiler.Permission{Allow: []string{subject, "mesh.tail"}, Deny: []string{subject}},
			Subscribe:      compiler.Permission{Allow: []string{subject}},
			AllowResponses: true},
		{Name: "left." + name, Publish: nothing, Subscribe: compiler.Permission{Allow: []string{subject}}},
		{Name: "x" + subject, Hash: hash, Publish: nothing, Subscribe: compiler.Permission{Allow: []string{name}}},
	}}
	out, err := Accounts(p, AccountsOptions{AllowMissing: true})
	if name == "" {
		if err == nil {
			t.Fatalf("a nameless user was written:\n%s", out)
		}
		return
	}
	if name == "x"+subject || "left."+name == "x"+subject {
		if err == nil {
			t.Fatalf("two users of one name were written:\n%s", out)
		}
		return
	}
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	got := parsedUsers(t, out, "ACC")
	want := []map[string]any{wantUser(p.Users[0]), wantUser(p.Users[2])}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("name %q subject %q hash %q: parsed\n%#v\nwant\n%#v\nfrom\n%s", name, subject, hash, got, want, out)
	}
}

func FuzzAccountsRoundTrip(f *testing.F) {
	seeds := [][3]string{
		{"mod.anchor.builder", "mesh.mod.builder.event.>", "abc"},
		{`a"b`, `x\y`, `"\`},
		{"a\nb", "c\r\nd", "\t"},
		{"\x00", "\x01\x1f\x7f", "\x00"},
		{"a,b", "c}d", "{e]"},
		{"# comment", "// comment", " #x"},
		{"$HOME", "${HOME}", "$2b$"},
		{"\u003e", `\u003e`, "é€𝄞"},
		{"\xff\xfe", "\xc3", "\xed\xa0\x80"},
		{"10k", "yes", "true"},
		{"'single'", "a b", "include \"x\""},
		{"a\"\n}\nb", "\"]\n", "\"\npermissions: {}"},
		{"\u2028", "\ufeff", "\ufffd"},
		{"", "x", "y"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, name, subject, hashTail string) {
		roundTrip(t, name, subject, hashTail)
	})
}

// TestAccountsRoundTripRandom runs the fuzz property over random strings in every ordinary test
// run: bytes of every value, weighted towards the ones the format treats specially.
func TestAccountsRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	special := []byte("\"\\\n\r\t\x00\x7f#/$,;{}[]:= '\x80\xc3\xff")
	str := func() string {
		b := make([]byte, r.IntN(24))
		for i := range b {
			if r.IntN(2) == 0 {
				b[i] = special[r.IntN(len(special))]
			} else {
				b[i] = byte(r.IntN(256))
			}
		}
		return string(b)
	}
	for range 2000 {
		roundTrip(t, str(), str(), str())
	}
}

func TestConfQuote(t *testing.T) {
	for in, want := range map[string]string{
		"mesh.mod.a.event.>": `"mesh.mod.a.event.>"`,
		`a"b\c`:              `"a\"b\\c"`,
		"\t\n\r\x00\x7f":     `"\t\n\r\x00\x7f"`,
		"é\xff":              "\"é\\xff\"",
	} {
		if got := confQuote(in); got != want {
			t.Errorf("confQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
