package deliver

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
)

// What a bus can tell of the users and permissions it runs (docs/nats.md, "What the bus says of
// its accounts"). The streams and consumers are read through the JetStream API; the accounts
// are not: no request mesh-controller may make lists a server's users, and a connection as a
// user the bus does not have is refused exactly as one with a wrong password is ("Authorization
// Violation" either way), so a connection attempt proves nothing. What remains is what meshc
// itself records on the bus when it delivers an accounts file, and the server's own digest of
// its configuration where its monitoring endpoint can be read. In operator mode the account
// resolver answers for each account (Pusher.Read).

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
	// Development: the file carried development credentials (meshc up's), not the catalogue's:
	// a comparison with it leaves credentials out.
	Development bool `json:"development,omitempty"`
}

// AccountsDigest is the digest an accounts file is recorded and compared by.
func AccountsDigest(accountsFile []byte) string { return wire.Digest(accountsFile) }

// RecordAccounts records on the bus that an accounts file was delivered: its digest, and each of
// its users' and accounts' digests (change.Principals.Record), so a later plan away from the
// server can say who differs.
func RecordAccounts(ctx context.Context, js jetstream.JetStream, rec AccountsRecord, delivered *change.Principals) error {
	if delivered != nil {
		data, err := delivered.Record()
		if err != nil {
			return err
		}
		if err := wire.PutRecord(ctx, js, principalsKey, data); err != nil {
			return err
		}
	}
	kv, err := wire.StateBucket(ctx, js)
	if err != nil {
		return fmt.Errorf("record the accounts delivered in %s: %w", compiler.ApplyBucket, wire.Explain(err))
	}
	data, _ := json.Marshal(rec)
	if _, err := kv.Put(ctx, accountsKey, data); err != nil {
		return fmt.Errorf("record the accounts delivered in %s: %w", compiler.ApplyBucket, wire.Explain(err))
	}
	return nil
}

// principalsKey records the principals of the accounts file last delivered.
const principalsKey = "accounts.delivered.principals"

// ReadAccountsRecord reads what the bus recorded of the last accounts file delivered: nil, nil
// when nothing is, and the record without its principals when they were not recorded (a meshc
// from before they were).
func ReadAccountsRecord(ctx context.Context, js jetstream.JetStream) (*AccountsRecord, *change.Principals, error) {
	kv, err := wire.OpenBucket(ctx, js, wire.BucketTiming{})
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, wire.Explain(err)
	}
	entry, err := kv.Get(ctx, accountsKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, wire.Explain(err)
	}
	var rec AccountsRecord
	if json.Unmarshal(entry.Value(), &rec) != nil {
		return nil, nil, nil
	}
	data, err := wire.GetRecord(ctx, js, principalsKey)
	if err != nil || data == nil {
		return &rec, nil, err
	}
	held, err := change.ReadRecord(data, "")
	if err != nil || held.File != rec.Digest {
		// Not the record of the file the head names: written half way, or by another meshc.
		return &rec, nil, nil
	}
	return &rec, held, nil
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

// pushedKey records, in operator mode, the issue time of each account version apply pushed.
const pushedKey = "accounts.pushed"

// recordPushed adds the issue times of what was just pushed to what the bus records.
func recordPushed(ctx context.Context, js jetstream.JetStream, issued map[string]int64) error {
	all, err := readPushed(ctx, js)
	if err != nil {
		return err
	}
	for k, v := range issued {
		all[k] = max(all[k], v)
	}
	data, err := gzipJSON(all)
	if err != nil {
		return err
	}
	return wire.PutRecord(ctx, js, pushedKey, data)
}

// readPushed reads the issue time of each account version apply pushed, by account key.
func readPushed(ctx context.Context, js jetstream.JetStream) (map[string]int64, error) {
	out := map[string]int64{}
	data, err := wire.GetRecord(ctx, js, pushedKey)
	if err != nil || data == nil {
		return out, err
	}
	z, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return out, nil
	}
	if json.NewDecoder(z).Decode(&out) != nil {
		return map[string]int64{}, nil
	}
	return out, nil
}

func gzipJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	if err := json.NewEncoder(z).Encode(v); err != nil {
		return nil, err
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
