package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
)

// What a bus can tell of the users and permissions it runs (docs/nats.md, "What the bus says of
// its accounts"). The streams and consumers are read through the JetStream API; the accounts
// are not: no request mesh-controller may make lists a server's users, and a connection as a
// user the bus does not have is refused exactly as one with a wrong password is ("Authorization
// Violation" either way), so a connection attempt proves nothing. What remains is what meshc
// itself records on the bus when it delivers an accounts file, and the server's own digest of
// its configuration where its monitoring endpoint can be read. In operator mode the account
// resolver answers for each account: that witness is added beside these (AccountsEvidence.Rests).

// accountsKey is the key of apply's bucket recording the accounts file last delivered.
const accountsKey = "accounts.delivered"

// AccountsRecord is what `meshc apply --accounts` records on the bus after delivering a file.
type AccountsRecord struct {
	// Digest is the SHA-256 of the accounts file delivered (AccountsDigest).
	Digest string `json:"digest"`
	// ConfigDigest is the server's /varz config_digest after the reload, when --monitor gave it.
	ConfigDigest string    `json:"config_digest,omitempty"`
	At           time.Time `json:"at"`
	By           string    `json:"by"`
}

// AccountsDigest is the digest an accounts file is recorded and compared by.
func AccountsDigest(accountsFile []byte) string {
	sum := sha256.Sum256(accountsFile)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// RecordAccounts records on the bus that the accounts file with digest was delivered.
func RecordAccounts(ctx context.Context, js jetstream.JetStream, rec AccountsRecord) error {
	kv, err := stateBucket(ctx, js)
	if err != nil {
		return fmt.Errorf("record the accounts delivered in %s: %w", compiler.ApplyBucket, explain(err))
	}
	data, _ := json.Marshal(rec)
	if _, err := kv.Put(ctx, accountsKey, data); err != nil {
		return fmt.Errorf("record the accounts delivered in %s: %w", compiler.ApplyBucket, explain(err))
	}
	return nil
}

// AccountsEvidence is what the bus tells of its users and permissions against a catalogue's.
type AccountsEvidence struct {
	// MayDiffer: the bus's users and permissions may not be the catalogue's.
	MayDiffer bool
	// Rests says what the verdict rests on: "the delivery recorded on the bus", "the server's
	// config_digest", "nothing the bus records".
	Rests string
	// Said is the sentence for the user, with what to do.
	Said string
}

// ServerConfigDigest reads the server's digest of its configuration (/varz config_digest) from
// its monitoring endpoint.
func ServerConfigDigest(ctx context.Context, monitor string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(monitor, "/")+"/varz", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var v struct {
		ConfigDigest string `json:"config_digest"`
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("/varz answered %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return "", err
	}
	if v.ConfigDigest == "" {
		return "", errors.New("/varz gives no config_digest (a server started without a configuration file)")
	}
	return v.ConfigDigest, nil
}

// CheckAccounts says whether the users and permissions on the bus may differ from the
// accounts file the catalogue composes (want, its AccountsDigest), from what the bus recorded
// of the last delivery and, with a monitoring URL, the server's config_digest now.
func CheckAccounts(ctx context.Context, js jetstream.JetStream, want, monitor string) AccountsEvidence {
	const deliver = "deliver them where the server runs: `meshc apply --accounts PATH --reload PID` (README: Where the accounts are delivered from)"
	var rec AccountsRecord
	kv, err := openBucket(ctx, js, bucketTiming{}.withDefaults())
	if err == nil {
		var entry jetstream.KeyValueEntry
		if entry, err = kv.Get(ctx, accountsKey); err == nil {
			err = json.Unmarshal(entry.Value(), &rec)
		}
	}
	if err != nil {
		return AccountsEvidence{MayDiffer: true, Rests: "nothing the bus records",
			Said: "meshc cannot tell whether the users and permissions on the bus are the catalogue's: no accounts delivery by meshc is recorded on it (a connection attempt cannot tell: the server refuses a user it does not have as it refuses a wrong password). This delivers streams and consumers only; if the accounts are delivered otherwise, check they are golden/accounts.conf, else " + deliver}
	}
	when := fmt.Sprintf("recorded on the bus by %s at %s", rec.By, rec.At.UTC().Format(time.RFC3339))
	if rec.Digest != want {
		return AccountsEvidence{MayDiffer: true, Rests: "the delivery recorded on the bus",
			Said: fmt.Sprintf("the users and permissions on the bus differ from the catalogue's: the accounts file last delivered (%s) is not the one this catalogue composes. This delivers streams and consumers only: %s", when, deliver)}
	}
	if monitor != "" && rec.ConfigDigest != "" {
		now, err := ServerConfigDigest(ctx, monitor)
		switch {
		case err != nil:
			return AccountsEvidence{Rests: "the delivery recorded on the bus",
				Said: fmt.Sprintf("the accounts file this catalogue composes was delivered (%s); the server's config_digest could not be read to confirm it is still loaded (%v)", when, err)}
		case now != rec.ConfigDigest:
			return AccountsEvidence{MayDiffer: true, Rests: "the server's config_digest",
				Said: fmt.Sprintf("the users and permissions on the bus may differ from the catalogue's: the server's configuration changed since meshc delivered the accounts (%s; config_digest %s then, %s now): %s", when, rec.ConfigDigest, now, deliver)}
		}
		return AccountsEvidence{Rests: "the server's config_digest", Said: fmt.Sprintf("the accounts file this catalogue composes is the one the server loaded (%s, config_digest unchanged)", when)}
	}
	return AccountsEvidence{Rests: "the delivery recorded on the bus", Said: fmt.Sprintf("the accounts file this catalogue composes was delivered (%s)", when)}
}
