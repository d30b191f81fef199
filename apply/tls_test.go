package apply

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/meshc-dev/meshc/apply/deliver"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/operator"
)

// pki is a CA the test makes, and a server's and a client's certificate it signs, as files.
type pki struct{ ca, serverCert, serverKey, clientCert, clientKey string }

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	write := func(name, kind string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := key()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "meshc test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ = x509.ParseCertificate(caDER)
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) (string, string) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, _ := x509.MarshalECPrivateKey(k)
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "EC PRIVATE KEY", kder)
	}
	p := pki{ca: write("ca.pem", "CERTIFICATE", caDER)}
	p.serverCert, p.serverKey = leaf(2, "server", x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = leaf(3, "client", x509.ExtKeyUsageClientAuth)
	return p
}

// Over TLS with a client certificate the server verifies, operator mode's push and mesh-
// controller's connection both go through meshc's TLS settings — the flags' CA, certificate and
// key, and a context file's — and without the CA the connection is refused, saying why.
func TestOperatorModeOverTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	m := newOpMesh(t)
	s := runOperatorServer(t, m, "tls {\n  cert_file: \""+p.serverCert+"\"\n  key_file: \""+p.serverKey+"\"\n  ca_file: \""+p.ca+"\"\n  verify: true\n}\n")
	url := strings.Replace(s.ClientURL(), "nats://", "tls://", 1)
	creds, _ := m.op.SystemCreds()
	system, err := operator.SystemUserFrom(creds)
	if err != nil {
		t.Fatal(err)
	}

	// The flags: push every account as the system user, each probed over the same TLS.
	c, err := wire.Resolve("apply", wire.Settings{Server: url, TLSCA: p.ca, TLSCert: p.clientCert, TLSKey: p.clientKey}, m.plan)
	if err != nil {
		t.Fatal(err)
	}
	pusher, err := deliver.NewPusher(t.Context(), c.Endpoint, system, m.plan, m.op.Signing, 5*time.Second)
	if err != nil {
		t.Fatalf("the system user over TLS: %v", err)
	}
	defer pusher.Close()
	did, err := pusher.Converge(t.Context())
	if err != nil || len(did.Pushed) != len(m.plan.OperatorAccounts()) {
		t.Fatalf("pushing over TLS: %+v %v", did, err)
	}

	// A context file: mesh-controller's credentials and the same TLS, as `nats context` writes.
	token, kp, _ := operator.IssueUser(m.signers[compiler.ControllerUser], compiler.ControllerUser, m.plan.Operator.Accounts[m.plan.Account])
	controllerCreds, _ := operator.Creds(token, kp)
	credsPath := filepath.Join(t.TempDir(), "controller.creds")
	os.WriteFile(credsPath, controllerCreds, 0o600)
	ctxFile := filepath.Join(t.TempDir(), "bus.json")
	data, _ := json.Marshal(map[string]string{"url": url, "creds": credsPath, "ca": p.ca, "cert": p.clientCert, "key": p.clientKey})
	os.WriteFile(ctxFile, data, 0o600)
	c, err = wire.Resolve("apply", wire.Settings{Context: ctxFile}, m.plan)
	if err != nil {
		t.Fatal(err)
	}
	if c.Endpoint.User != compiler.ControllerUser {
		t.Errorf("the credentials' user is %q, want the JWT's name %s (for its inbox prefix)", c.Endpoint.User, compiler.ControllerUser)
	}
	bus, err := c.Dial()
	if err != nil {
		t.Fatalf("mesh-controller over TLS from a context file: %v", err)
	}
	bus.Close()

	// No CA: the server's certificate is not trusted, and the error says so.
	c, _ = wire.Resolve("apply", wire.Settings{Server: url, TLSCert: p.clientCert, TLSKey: p.clientKey}, m.plan)
	if _, err := deliver.NewPusher(t.Context(), c.Endpoint, system, m.plan, m.op.Signing, 5*time.Second); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA: %v", err)
	}
	// No client certificate: the server, which verifies clients, refuses.
	c, _ = wire.Resolve("apply", wire.Settings{Server: url, TLSCA: p.ca}, m.plan)
	if _, err := deliver.NewPusher(t.Context(), c.Endpoint, system, m.plan, m.op.Signing, 5*time.Second); err == nil {
		t.Fatal("a client without a certificate was let in")
	}
}
