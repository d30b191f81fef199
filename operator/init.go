package operator

import (
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/meshc-dev/meshc/catalogue"
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
	seed, err := signing.Seed()
	if err != nil {
		return nil, err
	}
	_, raw, err := nkeys.DecodeSeed(seed)
	if err != nil {
		return nil, err
	}
	derived, err := hkdf.Key(sha256.New, raw, nil, "meshc system account signing key", 32)
	if err != nil {
		return nil, err
	}
	return nkeys.FromRawSeed(nkeys.PrefixByteAccount, derived)
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
	fmt.Fprintf(&b, "resolver {\n  type: full\n  dir: %q\n  allow_delete: true\n  interval: %q\n}\n", r.Dir, r.Interval.String())
	fmt.Fprintf(&b, "resolver_preload {\n  %q: %q\n}\n", o.System, sys)
	return b.String(), nil
}
