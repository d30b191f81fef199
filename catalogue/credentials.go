package catalogue

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/nats-io/nkeys"
	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"

	"meshc/internal/atomicfile"
)

// MintCost is the bcrypt cost of every password meshc mints. Deliberately low: the server pays
// it on every connection, and again for every connected client on every reload of the accounts
// file, even an identical one (NATS-FACTS §3: 51 clients at cost 10 took 2.97 s, with new
// connections blocked meanwhile). At cost 11 a storm of 32 clients connecting at once had
// connects fail (§9). A minted password is 256 random bits, far beyond brute force at any cost,
// so a higher cost buys nothing and costs the bus its availability. Cost 6 measured ~4 ms per
// connect, ~470 connects/s, no failures.
const MintCost = 6

// MintPassword returns a new random password and its bcrypt hash at MintCost. The password is
// 43 characters of URL-safe base64 (256 bits): under bcrypt's 72-byte limit, and without a
// character that needs quoting anywhere a person pastes it.
func MintPassword() (password, hash string, err error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", "", err
	}
	password = base64.RawURLEncoding.EncodeToString(raw)
	h, err := bcrypt.GenerateFromPassword([]byte(password), MintCost)
	if err != nil {
		return "", "", err
	}
	return password, string(h), nil
}

// MintNKey returns a new nkey user's seed (the secret its holder signs with) and public key
// (what the server checks, and what credentials.yaml records).
func MintNKey() (seed, public string, err error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", "", err
	}
	s, err := kp.Seed()
	if err != nil {
		return "", "", err
	}
	public, err = kp.PublicKey()
	return string(s), public, err
}

// RecordHashes records bcrypt hashes in dir's credentials.yaml, replacing a user's recorded hash
// (minting again rotates) and adding new users in name order among the others. Every other entry,
// and the comments, are left as they were. The file is written atomically with mode 0600: it
// holds no plaintext, but a hash is still a thing to guess at offline.
func RecordHashes(dir string, hashes map[string]string) error {
	path := filepath.Join(dir, CredentialsFile)
	doc := &yaml.Node{Kind: yaml.DocumentNode}
	root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	switch data, err := os.ReadFile(path); {
	case errors.Is(err, fs.ErrNotExist):
		root.HeadComment = "Recorded bcrypt hashes of the bus users, written by `meshc mint`. Never a plaintext."
		doc.Content = []*yaml.Node{root}
	case err != nil:
		return fmt.Errorf("reading %s: %w", path, err)
	default:
		if err := yaml.Unmarshal(data, doc); err != nil {
			return fmt.Errorf("%s is not valid YAML, so no hash was recorded; fix it first: %w", path, err)
		}
		if len(doc.Content) == 0 {
			doc.Kind = yaml.DocumentNode
			doc.Content = []*yaml.Node{root}
		}
		root = doc.Content[0]
		if root.Kind != yaml.MappingNode {
			return fmt.Errorf("%s must be a mapping of usernames to hashes; fix it first", path)
		}
	}

	for _, user := range slices.Sorted(maps.Keys(hashes)) {
		value := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: hashes[user], Style: yaml.DoubleQuotedStyle}
		replaced := false
		insertAt := len(root.Content)
		for i := 0; i+1 < len(root.Content); i += 2 {
			key := root.Content[i].Value
			if key == user {
				value.LineComment = root.Content[i+1].LineComment
				root.Content[i+1] = value
				replaced = true
				break
			}
			if key > user && insertAt == len(root.Content) {
				insertAt = i
			}
		}
		if replaced {
			continue
		}
		key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: user}
		root.Content = append(root.Content[:insertAt], append([]*yaml.Node{key, value}, root.Content[insertAt:]...)...)
	}

	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	if err := enc.Close(); err != nil {
		return err
	}
	return atomicfile.Write(path, out.Bytes(), 0o600)
}
