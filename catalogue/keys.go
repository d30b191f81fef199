package catalogue

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/nats-io/nkeys"
	"go.yaml.in/yaml/v3"

	"github.com/meshc-dev/meshc/internal/atomicfile"
)

// KeysFile holds the public keys of a mesh with `auth: operator`: the operator's, the system
// account's, meshc's probe key and every account's. meshc writes it (`meshc operator init`,
// `meshc mint`); it holds no secret, so it is committed and reviewed like credentials.yaml.
const KeysFile = "keys.yaml"

// Keys is keys.yaml as loaded.
type Keys struct {
	File string
	// Operator is the operator's identity key (O…): the key the servers trust.
	Operator Text
	// SigningKey is the operator's signing key (O…): every account JWT is signed with it, by
	// whoever holds its seed (CI), never by the operator's identity key, which stays offline.
	SigningKey Text
	// SystemAccount is the system account's key (A…): the one account whose users may push.
	SystemAccount Text
	// ProbeKey is a signing key (A…) every account lists, scoped to a user that may do nothing:
	// apply signs a user with it to prove an account it pushed takes connections. Its seed is
	// derived from the operator's signing key, so it is no second secret.
	ProbeKey Text
	// Accounts maps each account's name to its public key (A…), its identity on the bus:
	// JetStream keeps the mesh's streams under the mesh account's key, so a recorded key never
	// changes (docs/nats.md, "Operator mode").
	Accounts map[string]Text
	// Names are the account names in file order, for positions.
	Names []Text
}

// Account returns the recorded key of an account, "" when none is recorded.
func (k *Keys) Account(name string) string {
	if k == nil {
		return ""
	}
	return k.Accounts[name].Value
}

func (d *decoder) keys(doc *yaml.Node, k *Keys) { d.mapping(doc, keysTable(k, d)) }

// keysTable has no JSON Schema: meshc writes the file.
func keysTable(k *Keys, d *decoder) *table {
	return &table{what: KeysFile, doc: "The public keys of a mesh with auth: operator, written by meshc: never a seed.",
		fields: []field{
			{"operator", text(&k.Operator), "The operator's identity key (O…), which the servers trust."},
			{"signing-key", text(&k.SigningKey), "The operator's signing key (O…): every account JWT is signed with it."},
			{"system-account", text(&k.SystemAccount), "The system account's key (A…): its users push accounts."},
			{"probe-key", text(&k.ProbeKey), "A signing key (A…) every account lists, for a user that may do nothing: apply connects as one to prove an account it pushed works."},
			{"accounts", pairs(func(name, key Text) {
				if first, dup := k.Accounts[name.Value]; dup {
					*d.findings = append(*d.findings, RuleYAML.At(name.Pos, "account %s has two recorded keys (the first at line %d); an account's key is its identity, so keep the first", Excerpt(name.Value), first.Pos.Line))
					return
				}
				k.Accounts[name.Value] = key
				k.Names = append(k.Names, name)
			}, "account names", "public keys"), "Each account's public key (A…): its identity on the bus, which never changes."},
		},
	}
}

// KeyRecord is what keys.yaml records, for writing it.
type KeyRecord struct {
	Operator, SigningKey, SystemAccount, ProbeKey string
	Accounts                                      map[string]string
}

// Record is the file as loaded, to add to and write back.
func (k *Keys) Record() KeyRecord {
	r := KeyRecord{Accounts: map[string]string{}}
	if k == nil {
		return r
	}
	r.Operator, r.SigningKey, r.SystemAccount, r.ProbeKey = k.Operator.Value, k.SigningKey.Value, k.SystemAccount.Value, k.ProbeKey.Value
	for name, key := range k.Accounts {
		r.Accounts[name] = key.Value
	}
	return r
}

// Check says what in the record is not a public key of its kind: a seed recorded here would be
// a secret in git.
func (r KeyRecord) Check() error {
	check := func(what, key string, valid func(string) bool) error {
		if key != "" && !valid(key) {
			return fmt.Errorf("%s is not a public key of its kind; keys.yaml keeps public keys only", what)
		}
		return nil
	}
	for _, c := range []struct {
		what, key string
		valid     func(string) bool
	}{
		{"operator", r.Operator, nkeys.IsValidPublicOperatorKey},
		{"signing-key", r.SigningKey, nkeys.IsValidPublicOperatorKey},
		{"system-account", r.SystemAccount, nkeys.IsValidPublicAccountKey},
		{"probe-key", r.ProbeKey, nkeys.IsValidPublicAccountKey},
	} {
		if err := check(c.what, c.key, c.valid); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Accounts)) {
		if err := check("the key of account "+name, r.Accounts[name], nkeys.IsValidPublicAccountKey); err != nil {
			return err
		}
	}
	return nil
}

const keysHeader = `# The public keys of this mesh (auth: operator), written by meshc: never a seed. An account's
# key is its identity on the bus: JetStream keeps the mesh's streams under the mesh account's
# key, so a recorded key is never changed.
`

// Write writes the record as dir's keys.yaml, atomically, in a stable order: the same keys give
// the same bytes. The caller holds the catalogue's credentials lock (EditCredentials), which
// covers this file too: mint records a user's key there and its account's key here at once.
func (r KeyRecord) Write(dir string) error {
	if err := r.Check(); err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString(keysHeader)
	for _, f := range []struct{ key, value string }{
		{"operator", r.Operator}, {"signing-key", r.SigningKey}, {"system-account", r.SystemAccount}, {"probe-key", r.ProbeKey},
	} {
		if f.value != "" {
			fmt.Fprintf(&b, "%s: %s\n", f.key, strconv.Quote(f.value))
		}
	}
	if len(r.Accounts) > 0 {
		b.WriteString("accounts:\n")
		for _, name := range slices.Sorted(maps.Keys(r.Accounts)) {
			fmt.Fprintf(&b, "  %s: %s\n", strconv.Quote(name), strconv.Quote(r.Accounts[name]))
		}
	}
	return atomicfile.Write(filepath.Join(dir, KeysFile), b.Bytes(), 0o644)
}

// ReadKeys reads dir's keys.yaml alone, as the loader reads it, for a command that records keys
// (mint, operator init): a missing file is an empty record, and a file the loader would refuse is
// its first finding as an error.
func ReadKeys(dir string) (KeyRecord, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return KeyRecord{}, err
	}
	if !exists(dir, KeysFile) {
		return KeyRecord{Accounts: map[string]string{}}, nil
	}
	var findings Findings
	k := &Keys{File: KeysFile, Accounts: map[string]Text{}}
	if doc := readOptional(newOwnFiles(root), KeysFile, &findings, new([]Ignore)); doc != nil {
		newDecoder(KeysFile, &findings).keys(doc, k)
	}
	if len(findings) > 0 {
		return KeyRecord{}, fmt.Errorf("%s", findings.Sorted()[0])
	}
	return k.Record(), nil
}

// AddAccounts gives every account named that has no key one: the key known for it elsewhere (the
// golden claims, the bus), else a new one. It returns how many it added and how many it minted.
// An account's key is its identity, so one the golden claims record is never minted anew: the
// account under it holds whatever the bus keeps for it (the mesh's streams).
func (r *KeyRecord) AddAccounts(accounts []string, known map[string]string) (added, minted int, err error) {
	if r.Accounts == nil {
		r.Accounts = map[string]string{}
	}
	for _, a := range accounts {
		if r.Accounts[a] != "" {
			continue
		}
		if key := known[a]; key != "" {
			r.Accounts[a] = key
			added++
			continue
		}
		if r.Accounts[a], err = MintAccountKey(); err != nil {
			return added, minted, err
		}
		added++
		minted++
	}
	return added, minted, nil
}

// MintAccountKey returns a new account's public key. Its seed is thrown away: an account's JWT
// is signed by the operator's signing key and its users by their own scoped keys, so nobody
// ever needs to sign as the account itself — and nobody can.
func MintAccountKey() (string, error) {
	kp, err := nkeys.CreateAccount()
	if err != nil {
		return "", err
	}
	return kp.PublicKey()
}
