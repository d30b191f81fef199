// Package operator holds what operator mode needs a secret for (mesh.yaml `auth: operator`;
// docs/nats.md, "Operator mode"): the operator's keys and the system user's credentials, read
// from the environment or a file and never written where meshc writes anything else; the account
// JWTs signed from the claims compiler derives; users' credentials, each signed by a scoped key
// of its own; the requests only the operator may make (deleting accounts); and a new operator's
// keys with the servers' configuration that trusts them. It imports compiler and catalogue.
package operator

import (
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/atomicfile"
)

// The environment variables CI hands the secrets in, each holding the secret itself (a GitHub
// secret is text): the operator's signing key's seed, and the system user's credentials file.
const (
	SigningKeyVar  = "MESHC_OPERATOR_SIGNING_KEY"
	SystemCredsVar = "MESHC_SYSTEM_CREDS"
)

// Secret reads one secret from a file when path is given, else from the environment variable.
// Errors name where it was looked for, never what was found: a secret in a CI log is a secret
// given away.
func Secret(path, variable string) ([]byte, string, error) {
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, "", fmt.Errorf("reading %s: %w", path, errors.Unwrap(err))
		}
		return data, path, nil
	}
	if v := os.Getenv(variable); v != "" {
		return []byte(v), "$" + variable, nil
	}
	what := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(variable, "MESHC_"), "_", " "))
	return nil, "", fmt.Errorf("no %s: set %s to it (a CI secret) or name its file", what, variable)
}

// SigningKey reads the operator's signing key (a seed, SO…) from path or $MESHC_OPERATOR_SIGNING_KEY,
// and checks it is the one the catalogue records.
func SigningKey(path string, keys *compiler.OperatorKeys) (nkeys.KeyPair, error) {
	data, from, err := Secret(path, SigningKeyVar)
	if err != nil {
		return nil, err
	}
	seed := []byte(strings.TrimSpace(string(data)))
	kp, err := nkeys.FromSeed(seed)
	if err == nil {
		if p, _, _ := nkeys.DecodeSeed(seed); p != nkeys.PrefixByteOperator {
			err = errors.New("not an operator's seed")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s does not hold an operator signing key's seed (SO…): %v", from, err)
	}
	pub, _ := kp.PublicKey()
	if keys != nil && pub != keys.SigningKey {
		return nil, fmt.Errorf("the signing key in %s is %s, but keys.yaml records %s as the operator's: the servers trust only the recorded one", from, pub, keys.SigningKey)
	}
	return kp, nil
}

// SystemUser reads the system user's credentials file from path or $MESHC_SYSTEM_CREDS and
// returns the option that connects as it.
func SystemUser(path string) (nats.Option, error) {
	data, from, err := Secret(path, SystemCredsVar)
	if err != nil {
		return nil, err
	}
	opt, err := SystemUserFrom(data)
	if err != nil {
		return nil, fmt.Errorf("%s %v", from, err)
	}
	return opt, nil
}

// SystemUserFrom is SystemUser with the credentials in hand.
func SystemUserFrom(creds []byte) (nats.Option, error) {
	token, kp, err := ParseCreds(creds)
	if err != nil {
		return nil, fmt.Errorf("is not a credentials file (a user JWT and its seed, as `meshc operator init` writes system.creds): %v", err)
	}
	return UserOption(token, kp), nil
}

// Creds is a credentials file: a user's JWT and seed, as nats.UserCredentials reads it.
func Creds(token string, kp nkeys.KeyPair) ([]byte, error) {
	seed, err := kp.Seed()
	if err != nil {
		return nil, err
	}
	return jwt.FormatUserConfig(token, seed)
}

// ParseCreds reads a credentials file: the user's JWT and its key.
func ParseCreds(data []byte) (string, nkeys.KeyPair, error) {
	token, err := jwt.ParseDecoratedJWT(data)
	if err != nil {
		return "", nil, err
	}
	kp, err := jwt.ParseDecoratedUserNKey(data)
	if err != nil {
		return "", nil, err
	}
	return token, kp, nil
}

// UserOption connects with a user's JWT, signing the server's nonce with its key.
func UserOption(token string, kp nkeys.KeyPair) nats.Option {
	return func(o *nats.Options) error {
		// A context's user and password would be sent beside the JWT: the JWT is who this is.
		o.User, o.Password, o.Token, o.Nkey, o.UserJWT = "", "", "", "", nil
		return nats.UserJWT(func() (string, error) { return token, nil }, kp.Sign)(o)
	}
}

// EncodeAccount signs an account's claims with the operator's signing key. Its issue time is
// after every version a resolver holds (held is the newest held, 0 for none) and its id a hash
// of the whole payload: a cluster node that missed a push catches up from the others only with a
// newer time and another id, and two versions signed in one second share the library's id,
// which hashes the standard claims alone, so the node never catches up (docs/nats.md, "A push
// on a cluster").
func EncodeAccount(ac *jwt.AccountClaims, signer nkeys.KeyPair, held int64) (string, error) {
	token, _, err := EncodeAccountAt(ac, signer, held)
	return token, err
}

// EncodeAccountAt is EncodeAccount that also says the issue time it stamped.
func EncodeAccountAt(ac *jwt.AccountClaims, signer nkeys.KeyPair, held int64) (string, int64, error) {
	c := *ac
	pub, err := signer.PublicKey()
	if err != nil {
		return "", 0, err
	}
	c.Issuer, c.ID = pub, ""
	c.IssuedAt = max(time.Now().Unix(), held+1)
	c.Type, c.Version = jwt.AccountClaim, 2
	payload, err := json.Marshal(&c)
	if err != nil {
		return "", 0, err
	}
	sum := sha512.Sum512_256(payload)
	c.ID = base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:])
	if payload, err = json.Marshal(&c); err != nil {
		return "", 0, err
	}
	token, err := sign(payload, signer)
	return token, c.IssuedAt, err
}

// header is what the library writes before every JWT it signs with an nkey.
var header = base64.RawURLEncoding.EncodeToString([]byte(`{"typ":"JWT","alg":"ed25519-nkey"}`))

func sign(payload []byte, kp nkeys.KeyPair) (string, error) {
	signed := header + "." + base64.RawURLEncoding.EncodeToString(payload)
	sig, err := kp.Sign([]byte(signed))
	if err != nil {
		return "", err
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// Minted is one user's new credentials: the file its holder connects with (a secret) and the
// public half of the scoped key that signed it (what the catalogue records).
type Minted struct {
	Creds      []byte
	SigningKey string
}

// MintUser issues a user's credentials: a new key for the user and a new signing key for its
// scope, whose seed signs the user's JWT and is then forgotten. The JWT carries no permissions
// (its account's JWT lists the signing key with the user's grants as its template) and no
// expiry; minting again rotates both keys, and the next push of the account drops the old
// signing key, which closes every connection made with it.
func MintUser(user, accountKey string) (Minted, error) {
	signing, err := nkeys.CreateAccount()
	if err != nil {
		return Minted{}, err
	}
	token, kp, err := IssueUser(signing, user, accountKey)
	if err != nil {
		return Minted{}, err
	}
	creds, err := Creds(token, kp)
	if err != nil {
		return Minted{}, err
	}
	pub, err := signing.PublicKey()
	return Minted{Creds: creds, SigningKey: pub}, err
}

// IssueUser makes a new user key and a JWT for it signed by a scoped signing key of its account.
// jwt.IssueUserJWT sets the claims a scoped key demands: none at all (jwt.NewUserClaims alone
// sets limits, and the server refuses the user; docs/nats.md, "Operator mode").
func IssueUser(signing nkeys.KeyPair, user, accountKey string) (string, nkeys.KeyPair, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", nil, err
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return "", nil, err
	}
	token, err := jwt.IssueUserJWT(signing, accountKey, pub, user, 0)
	return token, kp, err
}

// ProbeKey is the probe key's pair, derived from the operator's signing key: every account lists
// its public half with a scope that may do nothing, and apply connects as a user it signs to
// prove an account it pushed takes connections. Derived, so it is no second secret.
func ProbeKey(signer nkeys.KeyPair) (nkeys.KeyPair, error) {
	return derivedKey(signer, "meshc probe key")
}

// derivedKey is an account key pair derived from the operator's signing key for one purpose
// (HKDF-SHA256 over its raw seed, the purpose as the info): no second secret to keep, and one
// purpose's key tells nothing of another's or of the signing key.
func derivedKey(signer nkeys.KeyPair, purpose string) (nkeys.KeyPair, error) {
	seed, err := signer.Seed()
	if err != nil {
		return nil, err
	}
	_, raw, err := nkeys.DecodeSeed(seed)
	if err != nil {
		return nil, err
	}
	derived, err := hkdf.Key(sha256.New, raw, nil, purpose, 32)
	if err != nil {
		return nil, err
	}
	return nkeys.FromRawSeed(nkeys.PrefixByteAccount, derived)
}

// DeleteRequest is the request that removes accounts from a resolver: a JWT the operator's
// signing key signs about itself, naming their keys. The server takes it only with
// `allow_delete: true` in its resolver block.
func DeleteRequest(signer nkeys.KeyPair, accounts []string) (string, error) {
	pub, err := signer.PublicKey()
	if err != nil {
		return "", err
	}
	gc := jwt.NewGenericClaims(pub)
	gc.Data["accounts"] = accounts
	return gc.Encode(signer)
}

// RecordAccountKeys gives every account of plan that has none a key, recorded in dir's keys.yaml
// (the caller holds the catalogue's lock: catalogue.EditCredentials): the one known records —
// golden/claims.json's, by account name — else a new one. It returns how many it added.
func RecordAccountKeys(dir string, plan *compiler.Plan, known map[string]string) (int, error) {
	rec, err := catalogue.ReadKeys(dir)
	if err != nil {
		return 0, err
	}
	added, _, err := rec.AddAccounts(plan.OperatorAccounts(), known)
	if err != nil || added == 0 {
		return 0, err
	}
	if plan.Operator != nil {
		for name, key := range rec.Accounts {
			plan.Operator.Accounts[name] = key
		}
	}
	return added, rec.Write(dir)
}

// MintFor mints credentials for users of plan, each signed by a new scoped key of its account,
// whose key must be recorded (RecordAccountKeys).
func MintFor(plan *compiler.Plan, users []string) (map[string]Minted, error) {
	out := map[string]Minted{}
	for _, name := range users {
		u := plan.User(name)
		if u == nil {
			return nil, fmt.Errorf("%s is not a bus user of this mesh", name)
		}
		account := plan.Operator.Accounts[u.Account]
		if account == "" {
			return nil, fmt.Errorf("account %s has no recorded key: run `meshc mint --missing`", u.Account)
		}
		m, err := MintUser(name, account)
		if err != nil {
			return nil, err
		}
		out[name] = m
	}
	return out, nil
}

// ErrUnrecorded marks a failure after credentials were handed out but before their keys were
// recorded: the credentials will not work, and whoever holds them must discard them.
var ErrUnrecorded = errors.New("the credentials handed out were NOT recorded and will not work: discard them, fix the cause and mint again")

// Issue mints users' credentials in the catalogue in dir and records their signing keys in edit
// (which holds the catalogue's lock): printed on stdout for one user, written as out/USER.creds
// (mode 0600, outside the catalogue) for several. Every refusal comes before anything is written;
// an account with no key gets one in keys.yaml; and a signing key is recorded only once its
// credentials are out, so the account never trusts credentials nobody holds. It says what it did.
func Issue(edit *catalogue.CredentialsEdit, dir string, plan *compiler.Plan, users []string, out string, known map[string]string, stdout io.Writer) (string, error) {
	if out == "" && len(users) > 1 {
		return "", fmt.Errorf("%d users' credentials are %d files: give --out DIR (outside the catalogue) to write them as DIR/USER.creds", len(users), len(users))
	}
	if out != "" {
		if err := Outside(out, dir); err != nil {
			return "", err
		}
	}
	added, err := RecordAccountKeys(dir, plan, known)
	if err != nil {
		return "", err
	}
	minted, err := MintFor(plan, users)
	if err != nil {
		return "", err
	}
	keys := map[string]string{}
	for _, u := range users {
		keys[u] = minted[u].SigningKey
		if out == "" {
			_, err = stdout.Write(minted[u].Creds)
		} else if err = os.MkdirAll(out, 0o700); err == nil {
			err = atomicfile.Write(filepath.Join(out, u+".creds"), minted[u].Creds, 0o600)
		}
		if err != nil {
			return "", fmt.Errorf("the credentials could not be written (%v), so nothing was recorded; mint again", err)
		}
	}
	if err := edit.Record(keys); err != nil {
		return "", fmt.Errorf("%w\n%w", err, ErrUnrecorded)
	}
	return fmt.Sprintf("recorded %d signing key(s) in %s and %d account key(s) in %s; run `meshc emit` and `meshc apply` so the bus takes them",
		len(users), catalogue.CredentialsFile, added, catalogue.KeysFile), nil
}
