package up

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/atomicfile"
)

// developmentCredentials returns a development password and hash for every user of the plan,
// minting those it does not have yet into STATE/dev-credentials.yaml. The hash is kept beside the
// password so accounts.conf stays byte-stable across runs (bcrypt salts are random). With nkeys
// (Options.NKeys) each user has a development nkey too, minted the same way.
func developmentCredentials(stateDir string, plan *compiler.Plan, nkeys bool) (map[string]devCredential, error) {
	path := filepath.Join(stateDir, "dev-credentials.yaml")
	creds := map[string]devCredential{}
	if data, err := os.ReadFile(path); err == nil {
		if err := yaml.Unmarshal(data, &creds); err != nil {
			return nil, fmt.Errorf("%s is not readable (%v); delete it and run meshc up again", path, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var missing []string
	for _, u := range plan.Users {
		if _, ok := creds[u.Name]; !ok {
			missing = append(missing, u.Name)
		}
	}
	passwords, err := catalogue.MintEach(len(missing), catalogue.MintPassword)
	if err != nil {
		return nil, err
	}
	for i, name := range missing {
		creds[name] = devCredential{Password: passwords[i].Secret, Hash: passwords[i].Record}
	}
	minted := len(missing) > 0
	for _, u := range plan.Users {
		c := creds[u.Name]
		if nkeys && c.Seed == "" {
			seed, public, err := catalogue.MintNKey()
			if err != nil {
				return nil, err
			}
			c.Seed, c.NKey = seed, public
			minted = true
		}
		creds[u.Name] = c
	}
	if minted {
		data, err := yaml.Marshal(creds)
		if err != nil {
			return nil, err
		}
		header := []byte("# Development passwords for `meshc up`: plaintext, for this machine only. Never commit.\n")
		if err := atomicfile.Write(path, append(header, data...), 0o600); err != nil {
			return nil, err
		}
	}
	return creds, nil
}

type devCredential struct {
	Password string `yaml:"password"`
	Hash     string `yaml:"hash"`
	// Seed and NKey are a development nkey, minted only for a bus run with Options.NKeys.
	Seed string `yaml:"seed,omitempty"`
	NKey string `yaml:"nkey,omitempty"`
}

// hashes are the development credentials' hashes, by user.
func hashes(dev map[string]devCredential) map[string]string {
	out := make(map[string]string, len(dev))
	for user, c := range dev {
		out[user] = c.Hash
	}
	return out
}
