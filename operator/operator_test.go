package operator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/meshc-dev/meshc/compiler"
)

func newSigner(t *testing.T) (nkeys.KeyPair, string) {
	t.Helper()
	kp, err := nkeys.CreateOperator()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	return kp, pub
}

func accountClaims(t *testing.T, tag string) *jwt.AccountClaims {
	t.Helper()
	kp, _ := nkeys.CreateAccount()
	pub, _ := kp.PublicKey()
	ac := jwt.NewAccountClaims(pub)
	ac.Name = "mod.anchor.catalog"
	ac.Tags = jwt.TagList{tag}
	return ac
}

// An account JWT decodes with the library the server uses, verifies, names the signing key as its
// issuer, and is issued after what the resolver holds: in the same second twice, and even when
// what is held was issued in the future (another pusher's clock).
func TestAccountJWTsAreIssuedAfterWhatIsHeld(t *testing.T) {
	signer, pub := newSigner(t)
	ac := accountClaims(t, "v1")
	now := time.Now().Unix()
	for _, held := range []int64{0, now, now + 100} {
		token, err := EncodeAccount(ac, signer, held)
		if err != nil {
			t.Fatal(err)
		}
		got, err := jwt.DecodeAccountClaims(token)
		if err != nil {
			t.Fatalf("the library refuses the JWT: %v", err)
		}
		if got.Issuer != pub || got.IssuedAt <= held || got.Subject != ac.Subject || got.Name != ac.Name || got.Type != jwt.AccountClaim || got.Version != 2 {
			t.Errorf("held %d: issuer %s, issued %d, subject %s, type %s v%d", held, got.Issuer, got.IssuedAt, got.Subject, got.Type, got.Version)
		}
		want, _ := compiler.Canonical(ac)
		if c, _ := compiler.Canonical(got); string(c) != string(want) {
			t.Errorf("the JWT says\n%s\nwant\n%s", c, want)
		}
	}
	if ac.Issuer != "" || ac.IssuedAt != 0 || ac.ID != "" {
		t.Error("encoding stamped the caller's claims")
	}
}

// Two versions of one account signed in the same second have different ids: a cluster node that
// missed one catches up only when the id differs (the library's id hashes the standard claims
// alone, and would be the same).
func TestTwoVersionsInOneSecondHaveTwoIDs(t *testing.T) {
	signer, _ := newSigner(t)
	v1 := accountClaims(t, "v1")
	v2 := *v1
	v2.Tags = jwt.TagList{"v2"}
	held := time.Now().Unix() + 10 // both issued at held+1, whatever the clock does meanwhile
	a, _ := EncodeAccount(v1, signer, held)
	b, _ := EncodeAccount(&v2, signer, held)
	ca, _ := jwt.DecodeAccountClaims(a)
	cb, _ := jwt.DecodeAccountClaims(b)
	if ca.IssuedAt != cb.IssuedAt {
		t.Fatalf("issued at %d and %d: the test needs one second", ca.IssuedAt, cb.IssuedAt)
	}
	if ca.ID == cb.ID {
		t.Errorf("two versions in one second share the id %s", ca.ID)
	}
	// Why EncodeAccount: the library's own encoding gives both the same id within a second. When
	// it no longer does, its jti covers the whole payload and EncodeAccount's could go.
	la, _ := v1.Encode(signer)
	lb, _ := v2.Encode(signer)
	da, _ := jwt.DecodeAccountClaims(la)
	db, _ := jwt.DecodeAccountClaims(lb)
	if da.IssuedAt == db.IssuedAt && da.ID != db.ID {
		t.Errorf("the library's ids now differ within a second (%s, %s): EncodeAccount's own id may no longer be needed", da.ID, db.ID)
	}
}

// A minted user's credentials hold a JWT with no permissions and no limits (what a scoped key
// demands: jwt.NewUserClaims alone sets limits, and the server refuses it), issued by the new
// signing key for the account named, and a seed; minting again makes other keys.
func TestMintedCredentialsAreScoped(t *testing.T) {
	kp, _ := nkeys.CreateAccount()
	account, _ := kp.PublicKey()
	m, err := MintUser("mod.anchor.catalog", account)
	if err != nil {
		t.Fatal(err)
	}
	token, user, err := ParseCreds(m.Creds)
	if err != nil {
		t.Fatal(err)
	}
	uc, err := jwt.DecodeUserClaims(token)
	if err != nil {
		t.Fatal(err)
	}
	upub, _ := user.PublicKey()
	if uc.Issuer != m.SigningKey || uc.IssuerAccount != account || uc.Subject != upub || uc.Name != "mod.anchor.catalog" || uc.Expires != 0 {
		t.Errorf("issuer %s (want %s), account %s, subject %s, name %s, expires %d", uc.Issuer, m.SigningKey, uc.IssuerAccount, uc.Subject, uc.Name, uc.Expires)
	}
	if !uc.HasEmptyPermissions() {
		t.Errorf("a scoped user carries permissions or limits: %+v", uc.UserPermissionLimits)
	}
	scope := jwt.NewUserScope()
	scope.Key = m.SigningKey
	if err := scope.ValidateScopedSigner(uc); err != nil {
		t.Errorf("the library would refuse the user under its scope: %v", err)
	}
	again, _ := MintUser("mod.anchor.catalog", account)
	if again.SigningKey == m.SigningKey {
		t.Error("minting again kept the signing key")
	}
}

// The probe key is the same for the same operator signing key, and another for another.
func TestTheProbeKeyIsDerived(t *testing.T) {
	signer, _ := newSigner(t)
	other, _ := newSigner(t)
	a, _ := ProbeKey(signer)
	b, _ := ProbeKey(signer)
	c, _ := ProbeKey(other)
	pa, _ := a.PublicKey()
	pb, _ := b.PublicKey()
	pc, _ := c.PublicKey()
	if pa != pb || pa == pc || !nkeys.IsValidPublicAccountKey(pa) {
		t.Errorf("probe keys %s, %s (same signer), %s (another)", pa, pb, pc)
	}
}

// The signing key comes from a file or the environment, must be an operator's seed and the one
// keys.yaml records, and no error ever repeats what it read.
func TestTheSigningKeyIsASecretRecordedByItsPublicHalf(t *testing.T) {
	signer, pub := newSigner(t)
	seed, _ := signer.Seed()
	keys := &compiler.OperatorKeys{SigningKey: pub}
	t.Setenv(SigningKeyVar, string(seed)+"\n")
	if kp, err := SigningKey("", keys); err != nil {
		t.Fatal(err)
	} else if p, _ := kp.PublicKey(); p != pub {
		t.Fatal("read another key")
	}
	path := filepath.Join(t.TempDir(), "signing.nk")
	os.WriteFile(path, seed, 0o600)
	if _, err := SigningKey(path, keys); err != nil {
		t.Fatal(err)
	}
	other, _ := newSigner(t)
	otherSeed, _ := other.Seed()
	account, _ := nkeys.CreateAccount()
	accountSeed, _ := account.Seed()
	for _, bad := range []string{string(otherSeed), string(accountSeed), "hunter2"} {
		t.Setenv(SigningKeyVar, bad)
		_, err := SigningKey("", keys)
		if err == nil {
			t.Fatalf("%.4s… was taken for the recorded signing key", bad)
		}
		if strings.Contains(err.Error(), bad) || strings.Contains(err.Error(), bad[:min(12, len(bad))]) {
			t.Errorf("the error repeats the secret: %v", err)
		}
		if !strings.Contains(err.Error(), "$"+SigningKeyVar) {
			t.Errorf("the error does not say where it looked: %v", err)
		}
	}
	t.Setenv(SigningKeyVar, "")
	if _, err := SigningKey("", keys); err == nil || !strings.Contains(err.Error(), SigningKeyVar) {
		t.Errorf("no key anywhere: %v", err)
	}
}

// compiler's Size, which the 1 MiB cap is checked by, is the length of the JWT EncodeAccount signs,
// within the stamped fields' few bytes, for claims full of `>` (six bytes each in the signed form,
// one in the canonical): counted by the canonical form, it fell 40,000 bytes short.
func TestSizeIsTheSignedJWTsLength(t *testing.T) {
	signer, _ := newSigner(t)
	ac := accountClaims(t, "v1")
	for i := range 2000 {
		kp, _ := nkeys.CreateAccount()
		key, _ := kp.PublicKey()
		scope := jwt.NewUserScope()
		scope.Key, scope.Role = key, "u"+strings.Repeat("x", i%7)
		scope.Template.Pub.Allow.Add("mesh.mod.a.event.>", "$JS.ACK.*.*.EVENTS.c.*.*.*.*.>")
		scope.Template.Sub.Allow.Add("_INBOX.u.>")
		ac.SigningKeys.AddScopedSigner(scope)
	}
	token, err := EncodeAccount(ac, signer, 0)
	if err != nil {
		t.Fatal(err)
	}
	size, err := compiler.AccountClaims{Name: ac.Name, Claims: ac}.Size()
	if err != nil {
		t.Fatal(err)
	}
	if d := size - len(token); d < -16 || d > 16 {
		t.Fatalf("Size says %d bytes, the signed JWT is %d", size, len(token))
	}
}
