package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/meshc-dev/meshc/emit"
)

// AccountsDelivery is the composed accounts file, the place it goes and the server that must
// load it: everything that can refuse decided, nothing written yet. `meshc apply --accounts` and
// `meshc up` deliver through it alike, so the reload rule below is written once.
type AccountsDelivery struct {
	data   []byte
	file   *accountsFile
	server Reloader
	before time.Time
}

// PrepareAccounts decides everything about delivering data to path that can refuse, writing
// nothing: where the bytes go and as whom (a symlink followed, an existing file's owner and mode
// kept), and, with a server, what it has loaded now. server may be nil: the file is then only
// written.
func PrepareAccounts(ctx context.Context, data []byte, path string, server Reloader) (*AccountsDelivery, error) {
	d := &AccountsDelivery{data: data, server: server}
	var err error
	if d.file, err = lookAtAccounts(path); err != nil {
		return nil, err
	}
	if server != nil {
		if d.before, err = server.Loaded(ctx); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Delivered is what a delivery did.
type Delivered struct {
	// Written: the file's bytes changed and were written.
	Written bool
	// Reloads the server made: 0, 1, or 2 when the file added accounts.
	Reloads int
	// Said is what it did, in a sentence.
	Said string
}

// Deliver writes the file when its bytes changed, and has the server load it when it loaded its
// configuration before the file last changed — so a rerun after a failed reload reloads again.
//
// A reload that adds accounts is followed by a second: the server wires an account's service
// imports only on the reload after the one that created it, and until then a module in a new
// account publishes into nothing (docs/nats.md, "Reload and scale with many accounts").
func (d *AccountsDelivery) Deliver(ctx context.Context) (Delivered, error) {
	previous := d.file.current
	changed, err := d.file.write(d.data)
	if err != nil {
		return Delivered{}, err
	}
	did := Delivered{Written: changed}
	path := d.file.path
	switch {
	case d.server != nil && !d.before.After(d.file.modTime):
		if err := d.reload(ctx, d.before); err != nil {
			return did, err
		}
		did.Reloads++
		added, cmpErr := emit.AccountsAdded(previous, d.data)
		if cmpErr != nil || len(added) > 0 {
			now, err := d.server.Loaded(ctx)
			if err == nil {
				err = d.reload(ctx, now)
			}
			// Why a second reload: new accounts, or a file that could not be compared (so new
			// accounts cannot be ruled out).
			why := fmt.Sprintf("%d accounts are new", len(added))
			if cmpErr != nil {
				why = fmt.Sprintf("the old file could not be compared with the new (%v), so new accounts could not be ruled out", cmpErr)
			}
			if err != nil {
				return did, fmt.Errorf("the second reload, which wires the service imports of accounts the first created (%s): %v; apply again to reload once more", why, err)
			}
			did.Reloads++
			did.Said = fmt.Sprintf("wrote %s and the server reloaded it twice: %s, and the server wires new accounts' service imports on the second reload", path, why)
		} else if changed {
			did.Said = fmt.Sprintf("wrote %s and the server reloaded it", path)
		} else {
			did.Said = fmt.Sprintf("%s is current but the server had not loaded it; the server reloaded it", path)
		}
	case d.server != nil:
		did.Said = fmt.Sprintf("%s is current and the server has loaded it; the server is not asked to reload", path)
	case changed:
		did.Said = fmt.Sprintf("wrote %s; reload the server to pick it up (--reload does)", path)
	default:
		did.Said = fmt.Sprintf("%s is current", path)
	}
	return did, nil
}

// reload has the server load the file, saying whether its user can read it when a signalled
// server kept its old configuration.
func (d *AccountsDelivery) reload(ctx context.Context, before time.Time) error {
	err := d.server.Reload(ctx, before)
	var nr *notReloaded
	if errors.As(err, &nr) {
		return fmt.Errorf("%w. %s; its log says why, and apply signals it again on the next run", err, readableBy(nr.pid, d.file))
	}
	return err
}
