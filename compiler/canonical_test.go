package compiler

import (
	"bytes"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// The canonical claims write `>` as itself everywhere, a scoped signing key's template too, which
// an encoder without HTML escaping would leave as \u003e (jwt's signing keys marshal themselves
// with json.Marshal): what the golden claims show a reviewer is the subject as written.
func TestCanonicalWritesTemplatesAsThemselves(t *testing.T) {
	account, _ := nkeys.CreateAccount()
	pub, _ := account.PublicKey()
	signer, _ := nkeys.CreateAccount()
	key, _ := signer.PublicKey()
	ac := jwt.NewAccountClaims(pub)
	ac.Exports.Add(&jwt.Export{Subject: "mesh.mod.catalog.tool.>", Type: jwt.Service})
	scope := jwt.NewUserScope()
	scope.Key = key
	scope.Template.Pub.Allow.Add("mesh.mod.catalog.event.>")
	ac.SigningKeys.AddScopedSigner(scope)

	c, err := Canonical(ac)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(c, []byte(`\u003e`)) || !bytes.Contains(c, []byte(`"mesh.mod.catalog.event.>"`)) || !bytes.Contains(c, []byte(`"mesh.mod.catalog.tool.>"`)) {
		t.Errorf("the canonical claims escape a subject:\n%s", c)
	}

}
