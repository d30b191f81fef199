package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go"

	"meshc/apply"
)

// connectFlags are the connection flags of the NATS CLI, so a user reuses what they have:
// --server, --user/--password, --creds, --nkey, TLS, --context (the CLI's own context files) and
// NATS_URL. Flags override the context, which overrides the environment.
type connectFlags struct {
	server, user, password, creds, nkey string
	tlsCert, tlsKey, tlsCA              string
	tlsFirst                            bool
	context                             string
}

const connectHelp = `Connection (as the NATS CLI; flags override --context, which overrides NATS_URL):
  --server URL        the server or cluster (comma-separated); default $NATS_URL
  --user, --password  username and password (apply as mesh-controller)
  --creds FILE        a JWT credentials file
  --nkey FILE         an nkey seed file
  --tlscert, --tlskey, --tlsca FILE   client certificate, key and CA
  --tlsfirst          TLS before the INFO handshake
  --context NAME      a NATS CLI context (~/.config/nats/context/NAME.json)
`

func (c *connectFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.server, "server", "", "NATS server `URL`s")
	fs.StringVar(&c.server, "s", "", "NATS server `URL`s (short for --server)")
	fs.StringVar(&c.user, "user", "", "username")
	fs.StringVar(&c.password, "password", "", "password")
	fs.StringVar(&c.creds, "creds", "", "credentials `FILE`")
	fs.StringVar(&c.nkey, "nkey", "", "nkey seed `FILE`")
	fs.StringVar(&c.tlsCert, "tlscert", "", "client certificate `FILE`")
	fs.StringVar(&c.tlsKey, "tlskey", "", "client key `FILE`")
	fs.StringVar(&c.tlsCA, "tlsca", "", "CA `FILE`")
	fs.BoolVar(&c.tlsFirst, "tlsfirst", false, "TLS before the handshake")
	fs.StringVar(&c.context, "context", "", "NATS CLI context `NAME`")
}

// wanted reports whether the user asked for a live server at all.
func (c *connectFlags) wanted() bool {
	return c.server != "" || c.context != "" || os.Getenv("NATS_URL") != ""
}

// natsContext is the part of a NATS CLI context file meshc reads.
type natsContext struct {
	URL      string `json:"url"`
	User     string `json:"user"`
	Password string `json:"password"`
	Creds    string `json:"creds"`
	NKey     string `json:"nkey"`
	Cert     string `json:"cert"`
	Key      string `json:"key"`
	CA       string `json:"ca"`
	TLSFirst bool   `json:"tls_first"`
}

// contextDir is where the NATS CLI keeps its contexts.
func contextDir() (string, error) {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "nats", "context"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".config", "nats", "context"), nil
}

func loadContext(name string) (natsContext, error) {
	var ctx natsContext
	if strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return ctx, fmt.Errorf("context %q: a context is named, not a path; give its name as `nats context ls` lists it", name)
	}
	dir, err := contextDir()
	if err != nil {
		return ctx, err
	}
	data, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return ctx, fmt.Errorf("context %q not found in %s; `nats context ls` lists them", name, dir)
	}
	if err != nil {
		return ctx, err
	}
	if err := json.Unmarshal(data, &ctx); err != nil {
		return ctx, fmt.Errorf("context %q is not valid JSON: %w", name, err)
	}
	return ctx, nil
}

// dial connects with the flags, a context and the environment, in that order of precedence.
func (c *connectFlags) dial() (*nats.Conn, error) {
	merged := natsContext{URL: os.Getenv("NATS_URL")}
	if c.context != "" {
		ctx, err := loadContext(c.context)
		if err != nil {
			return nil, err
		}
		merged = mergeContext(merged, ctx)
	}
	merged = mergeContext(merged, natsContext{
		URL: c.server, User: c.user, Password: c.password, Creds: c.creds, NKey: c.nkey,
		Cert: c.tlsCert, Key: c.tlsKey, CA: c.tlsCA, TLSFirst: c.tlsFirst,
	})
	if merged.URL == "" {
		return nil, errors.New("no server given: pass --server URL or --context NAME, or set NATS_URL")
	}
	var opts []nats.Option
	if merged.User != "" || merged.Password != "" {
		opts = append(opts, nats.UserInfo(merged.User, merged.Password))
	}
	if merged.Creds != "" {
		opts = append(opts, nats.UserCredentials(merged.Creds))
	}
	if merged.NKey != "" {
		o, err := nats.NkeyOptionFromSeed(merged.NKey)
		if err != nil {
			return nil, fmt.Errorf("reading nkey seed %s: %w", merged.NKey, err)
		}
		opts = append(opts, o)
	}
	if merged.Cert != "" || merged.Key != "" {
		opts = append(opts, nats.ClientCert(merged.Cert, merged.Key))
	}
	if merged.CA != "" {
		opts = append(opts, nats.RootCAs(merged.CA))
	}
	if merged.TLSFirst {
		opts = append(opts, nats.TLSHandshakeFirst())
	}
	return apply.Dial(merged.URL, opts...)
}

func mergeContext(base, over natsContext) natsContext {
	pick := func(a, b string) string {
		if b != "" {
			return b
		}
		return a
	}
	base.URL = pick(base.URL, over.URL)
	base.User = pick(base.User, over.User)
	base.Password = pick(base.Password, over.Password)
	base.Creds = pick(base.Creds, over.Creds)
	base.NKey = pick(base.NKey, over.NKey)
	base.Cert = pick(base.Cert, over.Cert)
	base.Key = pick(base.Key, over.Key)
	base.CA = pick(base.CA, over.CA)
	base.TLSFirst = base.TLSFirst || over.TLSFirst
	return base
}
