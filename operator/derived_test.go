package operator

import (
	"bytes"
	"testing"

	"github.com/nats-io/nkeys"
)

// The keys derived from the operator's signing key are what every server and every account
// already trust: the system account lists its signing key, every account its probe key. A
// change to the derivation, or to a purpose's words, would orphan them all, so each is pinned
// for one signing key; and two purposes never derive one key.
func TestDerivedKeysAreStable(t *testing.T) {
	signing, err := nkeys.FromRawSeed(nkeys.PrefixByteOperator, bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	system, err := systemSigner(signing)
	if err != nil {
		t.Fatal(err)
	}
	probe, err := ProbeKey(signing)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		name string
		kp   nkeys.KeyPair
		want string
	}{
		{"the system account's signing key", system, "AAMG2OLRJU3Y6KXR55YIHZFUK7I4MUANPL753MTXBOUK57NTIFDIUSCN"},
		{"the probe key", probe, "ACIWFYYJ4BJLZGPBD6W4TRC66FYSJCKISICQXCCVKHUCCMTBYSHGUGGD"},
	} {
		if pub, _ := k.kp.PublicKey(); pub != k.want {
			t.Errorf("%s derives as %s, where every account and server trusts %s", k.name, pub, k.want)
		}
	}
	if other, _ := derivedKey(signing, "another purpose"); other != nil {
		if pub, _ := other.PublicKey(); pub == "AAMG2OLRJU3Y6KXR55YIHZFUK7I4MUANPL753MTXBOUK57NTIFDIUSCN" || pub == "ACIWFYYJ4BJLZGPBD6W4TRC66FYSJCKISICQXCCVKHUCCMTBYSHGUGGD" {
			t.Error("another purpose derives a key already in use")
		}
	}
}
