package operator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
)

// Operator is an operator's keys, secrets included: what `meshc operator init` makes once and
// `meshc up` keeps for a development bus.
type Operator struct {
	// Name labels the operator's JWT: the mesh's name.
	Name string
	// Identity signs the operator's JWT alone, and is kept offline: only changing the operator's
	// signing keys needs it.
	Identity nkeys.KeyPair
	// Signing signs every account JWT: the secret CI holds.
	Signing nkeys.KeyPair
	// System is the system account's key. Its seed is never needed: its JWT is signed by Signing
	// and its user by a key derived from Signing.
	System string
}

// NewOperator makes a new operator's keys.
func NewOperator(name string) (*Operator, error) {
	identity, err := nkeys.CreateOperator()
	if err != nil {
		return nil, err
	}
	signing, err := nkeys.CreateOperator()
	if err != nil {
		return nil, err
	}
	system, err := catalogue.MintAccountKey()
	if err != nil {
		return nil, err
	}
	return &Operator{Name: name, Identity: identity, Signing: signing, System: system}, nil
}

// Record is the operator's public keys as keys.yaml records them.
func (o *Operator) Record() (catalogue.KeyRecord, error) {
	identity, err := o.Identity.PublicKey()
	if err != nil {
		return catalogue.KeyRecord{}, err
	}
	signing, err := o.Signing.PublicKey()
	if err != nil {
		return catalogue.KeyRecord{}, err
	}
	probe, err := ProbeKey(o.Signing)
	if err != nil {
		return catalogue.KeyRecord{}, err
	}
	probePub, err := probe.PublicKey()
	if err != nil {
		return catalogue.KeyRecord{}, err
	}
	return catalogue.KeyRecord{Operator: identity, SigningKey: signing, SystemAccount: o.System, ProbeKey: probePub, Accounts: map[string]string{}}, nil
}

// OperatorJWT is the operator's JWT, signed by its identity key: the servers trust what its
// signing key signs and nothing its identity key signs (strict signing key usage), so the
// identity key can stay offline.
func (o *Operator) OperatorJWT() (string, error) {
	identity, err := o.Identity.PublicKey()
	if err != nil {
		return "", err
	}
	signing, err := o.Signing.PublicKey()
	if err != nil {
		return "", err
	}
	oc := jwt.NewOperatorClaims(identity)
	oc.Name = o.Name
	oc.SigningKeys.Add(signing)
	oc.SystemAccount = o.System
	oc.StrictSigningKeyUsage = true
	return oc.Encode(o.Identity)
}

// systemSigner is the system account's signing key, derived from the operator's: whoever holds
// the operator's signing key can issue a new system user, and nobody else.
func systemSigner(signing nkeys.KeyPair) (nkeys.KeyPair, error) {
	return derivedKey(signing, "meshc system account signing key")
}

// SystemJWT is the system account's JWT, which the servers preload: its users may push.
func (o *Operator) SystemJWT() (string, error) {
	signer, err := systemSigner(o.Signing)
	if err != nil {
		return "", err
	}
	pub, err := signer.PublicKey()
	if err != nil {
		return "", err
	}
	ac := jwt.NewAccountClaims(o.System)
	ac.Name = "SYS"
	ac.SigningKeys.Add(pub)
	return EncodeAccount(ac, o.Signing, 0)
}

// The system account's requests a push makes (apply's delivery), the nats-server's own subjects,
// and the one place they are written: the system user meshc issues may make these and no other.
const (
	ClaimsUpdate = "$SYS.REQ.CLAIMS.UPDATE"
	ClaimsList   = "$SYS.REQ.CLAIMS.LIST"
	ClaimsDelete = "$SYS.REQ.CLAIMS.DELETE"
	ClaimsPack   = "$SYS.REQ.CLAIMS.PACK"
	// ServerIDs names each server (IDZ: its name, host and id, no statistics).
	ServerIDs = "$SYS.REQ.SERVER.PING.IDZ"
	// ServerRaftz, asked for the meta group only, names a cluster's members, so a server that
	// does not answer is known to be down (docs/nats.md, "Removing an account").
	ServerRaftz = "$SYS.REQ.SERVER.PING.RAFTZ"
)

// ClaimsLookup, AccountInfo and AccountJsz are an account's JWT, how a server runs it (the
// probe: its imports resolved) and the streams it holds (an account meshc removes must hold none).
func ClaimsLookup(account string) string { return "$SYS.REQ.ACCOUNT." + account + ".CLAIMS.LOOKUP" }
func AccountInfo(account string) string  { return "$SYS.REQ.ACCOUNT." + account + ".INFO" }
func AccountJsz(account string) string   { return "$SYS.REQ.ACCOUNT." + account + ".JSZ" }

// SystemSubjects are what the system user meshc issues may publish: the requests above. A server's
// statistics (STATSZ, VARZ), connections (CONNZ) and reloads are not among them; what an account's
// INFO and JSZ say of the accounts is (docs/nats.md, "What the CI system user can do").
var SystemSubjects = []string{
	ClaimsUpdate, ClaimsList, ClaimsDelete, ClaimsPack, ServerIDs, ServerRaftz,
	ClaimsLookup("*"), AccountInfo("*"), AccountJsz("*"),
}

// SystemCreds issues a system user's credentials: a secret, for whoever pushes (CI).
func (o *Operator) SystemCreds() ([]byte, error) {
	signer, err := systemSigner(o.Signing)
	if err != nil {
		return nil, err
	}
	pub, err := nkeys.CreateUser()
	if err != nil {
		return nil, err
	}
	upub, err := pub.PublicKey()
	if err != nil {
		return nil, err
	}
	uc := jwt.NewUserClaims(upub)
	uc.Name = "meshc-system"
	uc.IssuerAccount = o.System
	// What a push asks of the servers and nothing more (apply/operator.go's subjects): a CI
	// secret that leaks gives the resolver's requests, not every $SYS subject (a server's own
	// statistics, every connection's events, a kick or a reload of any account).
	uc.Pub.Allow.Add(SystemSubjects...)
	uc.Sub.Allow.Add("_INBOX.>")
	token, err := uc.Encode(signer)
	if err != nil {
		return nil, err
	}
	seed, err := pub.Seed()
	if err != nil {
		return nil, err
	}
	return jwt.FormatUserConfig(token, seed)
}

// ResolverOptions are the servers' resolver settings.
type ResolverOptions struct {
	// Dir is where a server keeps the account JWTs pushed to it.
	Dir string
	// Interval is how often a cluster's servers compare what they hold and catch up: a server
	// that was down during a push has it within one interval of coming back. Default 1m.
	Interval time.Duration
}

// ServerConf is the part of a server's configuration that makes it trust the operator and keep
// what is pushed: the operator's JWT, the system account, the full resolver (every account kept,
// deletes allowed for apply's removals) and the system account preloaded. No account is
// configured in a file: they arrive over the bus.
func (o *Operator) ServerConf(r ResolverOptions) (string, error) {
	op, err := o.OperatorJWT()
	if err != nil {
		return "", err
	}
	sys, err := o.SystemJWT()
	if err != nil {
		return "", err
	}
	if r.Interval <= 0 {
		r.Interval = time.Minute
	}
	var b strings.Builder
	b.WriteString("# The operator this mesh's servers trust, written by meshc: no secret. Accounts are not\n")
	b.WriteString("# configured here: meshc apply pushes them over the bus to the resolver.\n")
	fmt.Fprintf(&b, "operator: %q\nsystem_account: %q\n", op, o.System)
	// A client's longest protocol line: a longer one closes the connection (compiler.MaxControlLine).
	fmt.Fprintf(&b, "max_control_line: %d\n", compiler.MaxControlLine)
	fmt.Fprintf(&b, "resolver {\n  type: full\n  dir: %q\n  allow_delete: true\n  interval: %q\n}\n", r.Dir, r.Interval.String())
	fmt.Fprintf(&b, "resolver_preload {\n  %q: %q\n}\n", o.System, sys)
	return b.String(), nil
}

// The files Init writes into the secrets directory.
const (
	IdentityFile   = "operator.nk"
	SigningFile    = "signing.nk"
	SystemFile     = "system.creds"
	ServerConfFile = "operator.conf"
)

// Init makes a new operator for the catalogue in dir: its public keys, and a key for every account
// of plan, recorded in dir's keys.yaml; its secrets and the servers' configuration written into
// secrets, which must be outside the catalogue (a secret there is one `git add` from the
// repository) and must not hold them already (a secret is never overwritten). It says what it
// wrote and what to do with it.
func Init(dir, secrets string, plan *compiler.Plan, r ResolverOptions) (string, error) {
	if plan.Operator == nil {
		return "", fmt.Errorf("%s does not say `auth: operator`: set it first", catalogue.MeshFile)
	}
	if err := Outside(secrets, dir); err != nil {
		return "", err
	}
	edit, err := catalogue.EditCredentials(dir) // the catalogue's lock, which keys.yaml shares
	if err != nil {
		return "", err
	}
	defer edit.Close()
	held, err := catalogue.ReadKeys(dir)
	if err != nil {
		return "", err
	}
	if held.Operator != "" {
		return "", fmt.Errorf("%s already records an operator (%s): its servers trust it, and a new one means configuring every server again; to do that on purpose, delete the operator's lines from %s and run this again",
			catalogue.KeysFile, held.Operator, catalogue.KeysFile)
	}
	if err := os.MkdirAll(secrets, 0o700); err != nil {
		return "", err
	}
	var paths []string
	for _, name := range []string{IdentityFile, SigningFile, SystemFile, ServerConfFile} {
		p := filepath.Join(secrets, name)
		if _, err := os.Lstat(p); err == nil {
			return "", fmt.Errorf("%s exists: a secret is never overwritten; give another --secrets directory", p)
		}
		paths = append(paths, p)
	}
	op, err := NewOperator(plan.Account)
	if err != nil {
		return "", err
	}
	rec, err := op.Record()
	if err != nil {
		return "", err
	}
	for name, key := range held.Accounts {
		rec.Accounts[name] = key
	}
	if _, _, err := rec.AddAccounts(plan.OperatorAccounts(), nil); err != nil {
		return "", err
	}
	identity, _ := op.Identity.Seed()
	signing, _ := op.Signing.Seed()
	system, err := op.SystemCreds()
	if err != nil {
		return "", err
	}
	conf, err := op.ServerConf(r)
	if err != nil {
		return "", err
	}
	// The secrets first: keys.yaml naming an operator whose seeds were never written would be an
	// operator nobody can sign for.
	for i, data := range [][]byte{identity, signing, system, []byte(conf)} {
		mode := os.FileMode(0o600)
		if i == 3 {
			mode = 0o644 // the servers' configuration holds no secret
		}
		if err := writeNew(paths[i], data, mode); err != nil {
			return "", err
		}
	}
	if err := rec.Write(dir); err != nil {
		return "", err
	}
	return fmt.Sprintf("wrote %s; recorded the operator and %d account key(s) in %s. Keep %s offline, give %s and %s to CI as secrets (MESHC_OPERATOR_SIGNING_KEY, MESHC_SYSTEM_CREDS), include %s in each server's configuration, then run `meshc mint --missing --out CREDS`",
		strings.Join(paths, ", "), len(rec.Accounts), catalogue.KeysFile, IdentityFile, SigningFile, SystemFile, ServerConfFile), nil
}

// Outside refuses a secrets directory inside the catalogue's.
func Outside(secrets, dir string) error {
	abs := func(p string) string {
		a, _ := filepath.Abs(p)
		if r, err := filepath.EvalSymlinks(a); err == nil {
			return r
		}
		// Not there yet: its nearest existing parent, resolved, and the rest.
		parent := filepath.Dir(a)
		if r, err := filepath.EvalSymlinks(parent); err == nil {
			return filepath.Join(r, filepath.Base(a))
		}
		return a
	}
	s, d := abs(secrets), abs(dir)
	if rel, err := filepath.Rel(d, s); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("the secrets directory %s is inside the catalogue %s: secrets there are one `git add` from the repository; give a directory outside it", secrets, dir)
	}
	return nil
}

// writeNew writes a file that must not exist yet, with mode.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
