package catalogue

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nats-io/nkeys"
	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/sync/errgroup"

	"github.com/meshc-dev/meshc/internal/atomicfile"
	"github.com/meshc-dev/meshc/internal/filelock"
)

// MintCost is the bcrypt cost of every password meshc mints. Deliberately low: the server pays
// it on every connection, and again for every connected client on every reload of the accounts
// file, even an identical one (docs/nats.md, "Reload and its cost": 51 clients at cost 10 took
// 2.97 s, with new connections blocked meanwhile). At cost 11 a storm of 32 clients connecting at
// once had connects fail (docs/nats.md, "Measured baselines"). A minted password is 256 random
// bits, far beyond brute force at any cost, so a higher cost buys nothing and costs the bus its
// availability. Cost 6 measured ~4 ms per connect, ~470 connects/s, no failures.
const MintCost = 6

// MintPassword returns a new random password and its bcrypt hash at MintCost. The password is
// 43 characters of URL-safe base64 (256 bits): under bcrypt's 72-byte limit, and without a
// character that needs quoting anywhere a person pastes it.
func MintPassword() (password, hash string, err error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", "", err
	}
	password = base64.RawURLEncoding.EncodeToString(raw)
	h, err := bcrypt.GenerateFromPassword([]byte(password), MintCost)
	if err != nil {
		return "", "", err
	}
	return password, string(h), nil
}

// MintNKey returns a new nkey user's seed (the secret its holder signs with) and public key
// (what the server checks, and what credentials.yaml records).
func MintNKey() (seed, public string, err error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", "", err
	}
	s, err := kp.Seed()
	if err != nil {
		return "", "", err
	}
	public, err = kp.PublicKey()
	return string(s), public, err
}

// Minted is one credential MintEach minted: the secret its holder is given (a password or an
// nkey seed) and what credentials.yaml records of it (a bcrypt hash or a public key).
type Minted struct{ Secret, Record string }

// MintEach mints n credentials with mint (MintPassword or MintNKey), in order, on every core. A
// password is a bcrypt hash, about 4 ms at MintCost, and a catalogue of 10,000 modules has some
// 25,000 users: `meshc mint --missing` of one took 102 s on one core.
func MintEach(n int, mint func() (secret, record string, err error)) ([]Minted, error) {
	out := make([]Minted, n)
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range out {
		g.Go(func() error {
			secret, record, err := mint()
			out[i] = Minted{secret, record}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// RecordHashes records bcrypt hashes in dir's credentials.yaml: EditCredentials, Record, done.
func RecordHashes(dir string, hashes map[string]string) error {
	e, err := EditCredentials(dir)
	if err != nil {
		return err
	}
	defer e.Close()
	return e.Record(hashes)
}

// The first line of a credentials.yaml meshc writes, one per auth: what the file keeps.
const (
	passwordHeader = "# Recorded bcrypt hashes of the bus users, written by `meshc mint`. Never a plaintext."
	nkeyHeader     = "# Recorded nkey public keys of the bus users, written by `meshc mint`. Never a seed."
	// OperatorHeader opens the file of a mesh with auth: operator.
	OperatorHeader = "# Recorded public keys of each bus user's signing key (auth: operator), written by `meshc mint`. Never a seed."
)

// CredentialsHeader is the first line meshc writes in a credentials.yaml for the mesh's auth.
func CredentialsHeader(nkeys bool) string {
	if nkeys {
		return nkeyHeader
	}
	return passwordHeader
}

// CredentialFits says what is wrong with a recorded value for the mesh's auth: with auth: nkey
// a user's public key (U…), else a bcrypt hash the server recognises. nil when it fits. The
// value itself is never repeated: it may be the secret.
func CredentialFits(nkeyMesh bool, v string) error {
	if nkeyMesh {
		if !nkeys.IsValidPublicUserKey(v) {
			return errors.New("is not an nkey user's public key (U…)")
		}
		return nil
	}
	return CheckHash(v)
}

// CredentialFitsOperator says what is wrong with a recorded value with auth: operator: it must be
// the public key of a user's signing key (A…). nil when it fits.
func CredentialFitsOperator(v string) error {
	if !nkeys.IsValidPublicAccountKey(v) {
		return errors.New("is not a signing key's public key (A…)")
	}
	return nil
}

// CredentialsEdit is dir's credentials.yaml, read under a lock that is held until Close: two
// `meshc mint` at once each read, merge and write the file, and without the lock the second
// write drops the first one's hashes — passwords printed for hashes nobody recorded.
type CredentialsEdit struct {
	path     string // the file written: credentials.yaml, or the file its symlink names
	data     []byte // as read; nil when there is no file yet
	mode     fs.FileMode
	recorded map[string]*yaml.Node // username → its value node
	order    []*yaml.Node          // the keys, in file order
	lock     *filelock.Lock
	// Header is the file's first line when meshc writes it anew, and replaces the other
	// auth's header when a mint switches the file over (CredentialsHeader).
	Header string
}

// EditCredentials locks dir's credentials.yaml and reads it. A file meshc cannot rewrite
// faithfully — not YAML, not a flat mapping of names to one-line strings, or using anchors,
// aliases or tags — is refused here, before anything is minted: rewriting it through a YAML
// encoder would drop its blank lines and `---`, and an alias rewritten is YAML that no longer
// parses.
func EditCredentials(dir string) (*CredentialsEdit, error) {
	path := filepath.Join(dir, CredentialsFile)
	// A symlinked credentials.yaml stays a symlink: the file it names is the one rewritten, and
	// the lock is taken on the directory that file lives in (a lock file beside it would be one
	// more file to keep out of git; a directory can be locked in place).
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	} else if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// Only a link: a regular file found here was written by a concurrent mint between the
		// two looks (seen under load), and is read under the lock below.
		return nil, fmt.Errorf("%s is a symbolic link to a file that does not exist; fix the link or remove it", path)
	}
	lock, err := filelock.Acquire(filepath.Dir(path), false)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	e := &CredentialsEdit{path: path, mode: 0o600, recorded: map[string]*yaml.Node{}, lock: lock, Header: passwordHeader}
	if err := e.read(); err != nil {
		lock.Unlock()
		return nil, err
	}
	return e, nil
}

func (e *CredentialsEdit) read() error {
	e.recorded, e.order = map[string]*yaml.Node{}, nil
	info, err := os.Stat(e.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", e.path, err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file, so no hash was recorded", e.path)
	}
	// Its mode is kept: a read-only file (0400) stays read-only, a shared one stays shared.
	e.mode = info.Mode().Perm()
	if e.data, err = os.ReadFile(e.path); err != nil {
		return fmt.Errorf("reading %s: %w", e.path, err)
	}
	refuse := func(n *yaml.Node, why string) error {
		where := e.path
		if n != nil && n.Line > 0 {
			where = fmt.Sprintf("%s:%d", e.path, n.Line)
		}
		return fmt.Errorf("%s: %s, which meshc cannot rewrite without changing what else the file says; "+
			"so no hash was recorded: write it as plain `user: \"hash\"` lines first", where, why)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(e.data))
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return nil // empty, or only comments
	} else if err != nil {
		return fmt.Errorf("%s is not valid YAML, so no hash was recorded; fix it first: %w", e.path, err)
	}
	var second yaml.Node
	if err := dec.Decode(&second); !errors.Is(err, io.EOF) {
		return refuse(&second, "it holds a second YAML document")
	}
	if len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if isNull(root) && root.Value == "" {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%s must be a mapping of usernames to hashes; fix it first", e.path)
	}
	if root.Style&yaml.FlowStyle != 0 {
		return refuse(root, "it is written as a flow mapping ({...})")
	}
	if root.Anchor != "" || root.Tag != "!!map" {
		return refuse(root, "its mapping carries an anchor or a tag")
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch {
		case k.Kind == yaml.AliasNode || v.Kind == yaml.AliasNode:
			return refuse(k, "it uses an alias (*name)")
		case k.Anchor != "" || v.Anchor != "":
			return refuse(k, "it uses an anchor (&name)")
		case k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode || k.Tag != "!!str":
			return refuse(k, "an entry is not a name and a single value")
		case v.Tag != "!!str" && v.Tag != "!!null" || v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 || v.Line != k.Line:
			return refuse(v, "a value is not a one-line string on its key's line")
		case e.recorded[k.Value] != nil:
			return refuse(k, "a name is recorded twice")
		}
		e.recorded[k.Value] = v
		e.order = append(e.order, k)
	}
	return nil
}

// Recorded reports whether user has a hash recorded, as the file stands under the lock.
func (e *CredentialsEdit) Recorded(user string) bool {
	v := e.recorded[user]
	return v != nil && v.Value != ""
}

// Users are the names credentials.yaml records, in file order, as it stands under the lock.
func (e *CredentialsEdit) Users() []string {
	out := make([]string, len(e.order))
	for i, k := range e.order {
		out[i] = k.Value
	}
	return out
}

// Close releases the lock.
func (e *CredentialsEdit) Close() error { return e.lock.Unlock() }

// Record writes hashes into the file, replacing a user's recorded hash (minting again rotates)
// and adding new users in name order among the others. The file is edited as text, line by
// line, so everything else in it — comments, blank lines, a leading `---`, quoting — stays
// byte for byte as it was. It is written atomically, keeping its mode (0600 for a new file: it
// holds no plaintext, but a hash is still a thing to guess at offline).
func (e *CredentialsEdit) Record(hashes map[string]string) error {
	for user, hash := range hashes {
		if !plainUser.MatchString(user) || !quotableHash.MatchString(hash) {
			return fmt.Errorf("recording %s: %q cannot be written as a plain name and a quoted hash", e.path, Excerpt(user))
		}
	}
	eol := "\n"
	if bytes.Contains(e.data, []byte("\r\n")) {
		eol = "\r\n"
	}
	var lines []string
	if e.data == nil {
		lines = []string{e.Header}
	} else {
		lines = strings.Split(strings.TrimSuffix(string(e.data), eol), eol)
		// A file switched from one auth to the other no longer says it keeps what it kept.
		if (lines[0] == passwordHeader || lines[0] == nkeyHeader || lines[0] == OperatorHeader) && e.Header != "" {
			lines[0] = e.Header
		}
	}
	indent := ""
	if len(e.order) > 0 {
		indent = strings.Repeat(" ", e.order[0].Column-1)
	}
	entry := func(user, hash string) string { return fmt.Sprintf("%s%s: %q", indent, user, hash) }

	// Replacements keep line numbers; insertions are gathered per line and made last, from the
	// bottom up, so the line numbers the parser gave stay true while editing.
	inserts := map[int][]string{} // index of the line to insert before → lines
	for _, user := range slices.Sorted(maps.Keys(hashes)) {
		if v := e.recorded[user]; v != nil {
			i := v.Line - 1
			start := byteColumn(lines[i], v.Column)
			end := start + scalarLength(lines[i][start:], v)
			quoted := strconv.Quote(hashes[user])
			if end == start && start > 0 && lines[i][start-1] == ':' {
				quoted = " " + quoted // `user:` with nothing after it
			}
			lines[i] = lines[i][:start] + quoted + lines[i][end:]
			continue
		}
		at := len(lines) // after everything, when no recorded user sorts after this one
		if len(e.order) > 0 {
			at = e.order[len(e.order)-1].Line // just after the last entry's line
		}
		for _, k := range e.order {
			if k.Value > user {
				at = k.Line - 1
				// Above the comment lines that belong to that entry, not between them and it.
				for at > 0 && strings.HasPrefix(strings.TrimSpace(lines[at-1]), "#") && strings.TrimSpace(k.HeadComment) != "" {
					at--
				}
				break
			}
		}
		inserts[at] = append(inserts[at], entry(user, hashes[user]))
	}
	for _, at := range slices.Backward(slices.Sorted(maps.Keys(inserts))) {
		lines = slices.Insert(lines, at, inserts[at]...)
	}
	out := []byte(strings.Join(lines, eol) + eol)

	// The edit is checked by reading it back: every hash as given, every other entry as it was.
	var check map[string]any
	if err := yaml.Unmarshal(out, &check); err != nil {
		return fmt.Errorf("%s could not be rewritten faithfully (%v), so no hash was recorded", e.path, err)
	}
	for user, v := range e.recorded {
		want := v.Value
		if h, ok := hashes[user]; ok {
			want = h
		}
		if got, _ := check[user].(string); got != want && !(want == "" && check[user] == nil) {
			return fmt.Errorf("%s could not be rewritten faithfully (%s), so no hash was recorded", e.path, user)
		}
	}
	for user, h := range hashes {
		if check[user] != h {
			return fmt.Errorf("%s could not be rewritten faithfully (%s), so no hash was recorded", e.path, user)
		}
	}
	if err := atomicfile.Write(e.path, out, e.mode); err != nil {
		return err
	}
	e.data = out
	return e.read() // positions for a second Record under the same lock
}

// What Record writes as a plain key (a bus username) and inside double quotes (a hash).
var (
	plainUser    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	quotableHash = regexp.MustCompile(`^[A-Za-z0-9._$/-]+$`)
)

// byteColumn turns yaml.v3's 1-based column (in runes) into a byte offset in line.
func byteColumn(line string, col int) int {
	i := 0
	for n := 1; n < col && i < len(line); n++ {
		_, size := utf8.DecodeRuneInString(line[i:])
		i += size
	}
	return i
}

// scalarLength is how many bytes the one-line scalar v occupies at the start of rest: up to its
// closing quote, or for a plain scalar up to a comment or the end of the line.
func scalarLength(rest string, v *yaml.Node) int {
	switch {
	case v.Style&yaml.DoubleQuotedStyle != 0:
		for i := 1; i < len(rest); i++ {
			switch rest[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
	case v.Style&yaml.SingleQuotedStyle != 0:
		for i := 1; i < len(rest); i++ {
			if rest[i] == '\'' {
				if i+1 < len(rest) && rest[i+1] == '\'' {
					i++
					continue
				}
				return i + 1
			}
		}
	default:
		end := len(rest)
		if i := strings.Index(rest, " #"); i >= 0 {
			end = i
		}
		return len(strings.TrimRight(rest[:end], " \t"))
	}
	return len(rest)
}

// Remove deletes users' recorded entries from the file, line by line like Record (every other
// line stays as it was), and reports which it removed: a user without a record can no longer
// connect once the bus has the file (or, in operator mode, the account without the user's key).
func (e *CredentialsEdit) Remove(users []string) ([]string, error) {
	drop := map[int]bool{}
	var removed []string
	for _, u := range users {
		if v := e.recorded[u]; v != nil {
			drop[v.Line-1] = true
			removed = append(removed, u)
		}
	}
	if len(removed) == 0 {
		return nil, nil
	}
	eol := "\n"
	if bytes.Contains(e.data, []byte("\r\n")) {
		eol = "\r\n"
	}
	lines := strings.Split(strings.TrimSuffix(string(e.data), eol), eol)
	kept := lines[:0]
	for i, l := range lines {
		if !drop[i] {
			kept = append(kept, l)
		}
	}
	out := []byte(strings.Join(kept, eol) + eol)
	var check map[string]any
	if err := yaml.Unmarshal(out, &check); err != nil {
		return nil, fmt.Errorf("%s could not be rewritten faithfully (%v), so nothing was removed", e.path, err)
	}
	for user, v := range e.recorded {
		_, kept := check[user]
		got, _ := check[user].(string)
		if slices.Contains(removed, user) == kept || kept && got != v.Value && !(v.Value == "" && check[user] == nil) {
			return nil, fmt.Errorf("%s could not be rewritten faithfully (%s), so nothing was removed", e.path, user)
		}
	}
	if err := atomicfile.Write(e.path, out, e.mode); err != nil {
		return nil, err
	}
	e.data = out
	return removed, e.read()
}
