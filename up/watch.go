package up

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
)

// Watch polls the catalogue in dir and, on a change, compiles it again (compile returns nil when
// the catalogue has errors, having said so), recomposes the accounts, reloads the server in
// place and applies again, until ctx ends. It says what it does through say.
func Watch(ctx context.Context, dir string, b *Bus, compile func() *compiler.Plan, say func(string, ...any)) {
	say("watching %s for changes; Ctrl-C stops the bus", dir)
	last := catalogueDigest(dir)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			say("stopping")
			return
		case <-tick.C:
		}
		digest := catalogueDigest(dir)
		if digest == last {
			continue
		}
		last = digest
		plan := compile()
		if plan == nil {
			say("the catalogue has errors; the bus keeps running as it was")
			continue
		}
		type updated struct {
			reloads int
			changes change.Changes
		}
		u, err := Interruptible(ctx, func() (updated, error) {
			reloads, changes, err := b.Update(ctx, plan)
			return updated{reloads, changes}, err
		})
		switch {
		case b.op != nil:
			say("accounts: pushed %d account(s), revoked %d, deleted %d; no reload", len(b.Pushed.Pushed), len(b.Pushed.Revoked), len(b.Pushed.Deleted))
		case u.reloads == 2:
			say("reloaded the accounts in place, twice: the change added accounts, whose service imports the server wires on the second reload")
		case u.reloads == 1:
			say("reloaded the accounts in place")
		}
		if errors.Is(err, ErrInterrupted) {
			say("stopping")
			return
		}
		if err != nil {
			say("%v", err)
			continue
		}
		say("applied: %s", u.changes.Summary())
		for _, d := range Dropped(u.changes) {
			say("%s", d)
		}
		// A user the change added gets its context too.
		if _, err := b.WriteContexts(); err != nil {
			say("%v", err)
		}
	}
}

// catalogueDigest fingerprints every catalogue file's name, size and modification time.
func catalogueDigest(dir string) string {
	h := sha256.New()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == ".meshc" || d.Name() == catalogue.GoldenDir || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if info, err := d.Info(); err == nil && !d.IsDir() {
			fmt.Fprintf(h, "%s %d %d\n", p, info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	return fmt.Sprintf("%x", h.Sum(nil))
}
