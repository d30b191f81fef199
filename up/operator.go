package up

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"go.yaml.in/yaml/v3"

	"github.com/meshc-dev/meshc/apply/deliver"
	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/atomicfile"
	"github.com/meshc-dev/meshc/operator"
)

// A mesh with auth: operator runs on a development operator whose keys live in the state
// directory (STATE/dev-keys.yaml, seeds included, never committed): the accounts are pushed to
// the server's resolver as `meshc apply` pushes them, and a catalogue change is pushed again,
// with no reload. The catalogue's own keys are its holders'; a local bus never needs them.

const devKeysFile = "dev-keys.yaml"

// devKeys are a development operator's keys: seeds for what signs, public keys for the accounts
// (whose seeds nobody needs).
type devKeys struct {
	Operator string            `yaml:"operator"`
	Signing  string            `yaml:"signing"`
	System   string            `yaml:"system"`
	Accounts map[string]string `yaml:"accounts"`
	// Users are each user's scoped signing key's seed: a development user's JWT is signed on
	// demand.
	Users map[string]string `yaml:"users"`
}

// devOperator is a loaded development operator.
type devOperator struct {
	op    *operator.Operator
	keys  devKeys
	probe string
}

// developmentOperator loads STATE/dev-keys.yaml, minting whatever the plan needs that it lacks:
// the operator on first use, an account key per account and a signing key per user.
func developmentOperator(stateDir string, plan *compiler.Plan) (*devOperator, error) {
	path := filepath.Join(stateDir, devKeysFile)
	var k devKeys
	if data, err := os.ReadFile(path); err == nil {
		if err := yaml.Unmarshal(data, &k); err != nil {
			return nil, fmt.Errorf("%s is not readable (%v); delete it (and the state directory's jwt/) and run meshc up again", path, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	minted := false
	if k.Operator == "" {
		op, err := operator.NewOperator(plan.Account)
		if err != nil {
			return nil, err
		}
		id, _ := op.Identity.Seed()
		sk, _ := op.Signing.Seed()
		k = devKeys{Operator: string(id), Signing: string(sk), System: op.System}
		minted = true
	}
	if k.Accounts == nil {
		k.Accounts = map[string]string{}
	}
	if k.Users == nil {
		k.Users = map[string]string{}
	}
	rec := catalogue.KeyRecord{Accounts: k.Accounts}
	added, _, err := rec.AddAccounts(plan.OperatorAccounts(), nil)
	if err != nil {
		return nil, err
	}
	minted = minted || added > 0
	for _, u := range plan.Users {
		if k.Users[u.Name] == "" {
			kp, err := nkeys.CreateAccount()
			if err != nil {
				return nil, err
			}
			seed, _ := kp.Seed()
			k.Users[u.Name], minted = string(seed), true
		}
	}
	if minted {
		data, err := yaml.Marshal(k)
		if err != nil {
			return nil, err
		}
		header := []byte("# Development operator keys for `meshc up`: seeds, for this machine only. Never commit.\n")
		if err := atomicfile.Write(path, append(header, data...), 0o600); err != nil {
			return nil, err
		}
	}
	d := &devOperator{keys: k, op: &operator.Operator{Name: plan.Account, System: k.System}}
	if d.op.Identity, err = nkeys.FromSeed([]byte(k.Operator)); err != nil {
		return nil, fmt.Errorf("%s: the operator's seed: %v; delete it (and the state directory's jwt/) and run meshc up again", path, err)
	}
	if d.op.Signing, err = nkeys.FromSeed([]byte(k.Signing)); err != nil {
		return nil, fmt.Errorf("%s: the signing key's seed: %v; delete it (and the state directory's jwt/) and run meshc up again", path, err)
	}
	probe, err := operator.ProbeKey(d.op.Signing)
	if err != nil {
		return nil, err
	}
	d.probe, _ = probe.PublicKey()
	return d, nil
}

// localPlan is the plan with the development operator's keys in place of the catalogue's.
func (d *devOperator) localPlan(plan *compiler.Plan) *compiler.Plan {
	rec, _ := d.op.Record()
	local := plan.WithOperatorKeys(&compiler.OperatorKeys{Operator: rec.Operator, SigningKey: rec.SigningKey, SystemAccount: rec.SystemAccount, ProbeKey: d.probe, Accounts: d.keys.Accounts})
	local.Users = slices.Clone(plan.Users)
	for i := range local.Users {
		kp, _ := nkeys.FromSeed([]byte(d.keys.Users[local.Users[i].Name]))
		local.Users[i].SigningKey, _ = kp.PublicKey()
		local.Users[i].Hash, local.Users[i].NKey = "", ""
	}
	return local
}

// userOption connects as a user: a JWT signed by its development signing key.
func (d *devOperator) userOption(plan *compiler.Plan, user string) (nats.Option, error) {
	token, kp, err := d.issue(plan, user)
	if err != nil {
		return nil, err
	}
	return operator.UserOption(token, kp), nil
}

func (d *devOperator) issue(plan *compiler.Plan, user string) (string, nkeys.KeyPair, error) {
	u := plan.User(user)
	if u == nil {
		return "", nil, fmt.Errorf("%s is not a bus user of this mesh", user)
	}
	signing, err := nkeys.FromSeed([]byte(d.keys.Users[user]))
	if err != nil {
		return "", nil, fmt.Errorf("no development key for %s: %v", user, err)
	}
	return operator.IssueUser(signing, user, d.keys.Accounts[u.Account])
}

// creds is a user's development credentials file.
func (d *devOperator) creds(plan *compiler.Plan, user string) ([]byte, error) {
	token, kp, err := d.issue(plan, user)
	if err != nil {
		return nil, err
	}
	return operator.Creds(token, kp)
}

// writeOperatorConf writes STATE/operator.conf, the server's trust in the development operator,
// which STATE/server.conf includes in place of the accounts file.
func (d *devOperator) writeOperatorConf(stateDir string) error {
	dir, err := filepath.Abs(filepath.Join(stateDir, "jwt"))
	if err != nil {
		return err
	}
	conf, err := d.op.ServerConf(operator.ResolverOptions{Dir: dir})
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(stateDir, operatorConfFile), []byte(conf), 0o600)
}

const operatorConfFile = "operator.conf"

// push pushes the plan's accounts as the development system user, as `meshc apply` does: what
// the resolver holds read, diffed, the accounts that differ pushed and proven, those the
// catalogue dropped revoked and deleted.
func (b *Bus) push(ctx context.Context) (deliver.Delivered, error) {
	creds, err := b.op.op.SystemCreds()
	if err != nil {
		return deliver.Delivered{}, err
	}
	sys, err := operator.SystemUserFrom(creds)
	if err != nil {
		return deliver.Delivered{}, err
	}
	nc, err := wire.Dial(b.URL, nats.Name("meshc up"), sys)
	if err != nil {
		return deliver.Delivered{}, err
	}
	defer nc.Close()
	local := b.op.localPlan(b.plan)
	p, err := deliver.PusherOn(ctx, nc, local, deliver.PushOptions{
		Signer: b.op.op.Signing,
		Dial:   func(extra ...nats.Option) (*nats.Conn, error) { return nats.Connect(b.URL, extra...) },
	}, 10*time.Second)
	if err != nil {
		return deliver.Delivered{}, err
	}
	return p.Converge(ctx)
}

// moveStore moves a bus that ran from an accounts file to operator mode without losing its
// streams: JetStream keeps an account's streams in a directory named after the account — its
// name in a file, its key in operator mode (docs/nats.md, "Moving a bus to operator mode").
// Before the server starts: the directory of the mesh's name becomes the directory of its key.
func moveStore(stateDir, mesh, key string) (bool, error) {
	base := filepath.Join(stateDir, "jetstream", "jetstream")
	from, to := filepath.Join(base, mesh), filepath.Join(base, key)
	if _, err := os.Stat(from); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if _, err := os.Stat(to); err == nil {
		return false, fmt.Errorf("both %s (the mesh's streams from an accounts file) and %s (its streams in operator mode) exist: keep the one whose streams you want, move the other away, and run meshc up again", from, to)
	}
	return true, os.Rename(from, to)
}
