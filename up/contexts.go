package up

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/atomicfile"
)

// WriteContexts writes a NATS CLI context per bus user, STATE/contexts/USER.json (mode 0600): the
// server, the user's development password and the inbox prefix its grant names. `nats --context
// FILE` and `meshc … --context FILE` take one by its path, so no password is ever printed on a
// command line, where shell history and process lists keep it.
func (b *Bus) WriteContexts() (map[string]string, error) {
	stateDir, url, plan, dev := b.State, b.URL, b.plan, b.dev
	dir := filepath.Join(stateDir, "contexts")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	paths := map[string]string{}
	for _, u := range plan.Users {
		ctx := map[string]string{
			"description": fmt.Sprintf("meshc up: %s on the %s mesh (development password)", u.Name, plan.Account),
			"url":         url,
			"user":        u.Name,
			"password":    dev[u.Name].Password,
		}
		// A serving user has no inbox: it only answers.
		if u.HasInbox() {
			ctx["inbox_prefix"] = compiler.InboxPrefix(u.Name)
		}
		if b.op != nil {
			// Operator mode: a credentials file beside the context, signed by the user's
			// development signing key.
			creds, err := b.op.creds(plan, u.Name)
			if err != nil {
				return nil, err
			}
			path, err := filepath.Abs(filepath.Join(dir, u.Name+".creds"))
			if err != nil {
				return nil, err
			}
			if err := atomicfile.Write(path, creds, 0o600); err != nil {
				return nil, err
			}
			delete(ctx, "user")
			delete(ctx, "password")
			ctx["creds"] = path
			ctx["description"] = fmt.Sprintf("meshc up: %s on the %s mesh (development credentials)", u.Name, plan.Account)
		}
		data, err := json.MarshalIndent(ctx, "", "  ")
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, u.Name+".json")
		if err := atomicfile.Write(path, append(data, '\n'), 0o600); err != nil {
			return nil, err
		}
		paths[u.Name] = path
	}
	return paths, nil
}

// PrintConnect says where the bus is and how to connect to it as its users, by their contexts,
// and how to plan the catalogue in dir (as given to up) against it: each line runs as printed.
func (b *Bus) PrintConnect(w io.Writer, contexts map[string]string, dir string) {
	url, plan := b.URL, b.plan
	what := "development password"
	if b.op != nil {
		what = "development credentials"
	}
	fmt.Fprintf(w, "\nThe bus is at %s. Each user has a NATS CLI context (its %s and\n", url, what)
	fmt.Fprintf(w, "the inbox prefix its grant names) in %s; connect as one, for example:\n\n", filepath.Dir(contexts[compiler.ControllerUser]))
	shown := 0
	for _, u := range plan.Users {
		if u.Kind == compiler.KindController || (u.Kind == compiler.KindModule && shown < 3) || u.Kind == compiler.KindPerson && shown < 4 {
			fmt.Fprintf(w, "  nats --context %s ...\n", contexts[u.Name])
			shown++
		}
	}
	fmt.Fprintf(w, "  meshc plan %s --context %s\n\n", shellWord(dir), shellWord(contexts[compiler.ControllerUser]))
}

// shellWord is s as one word of a shell command line: as it is when nothing in it is special.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
