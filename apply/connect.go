package apply

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// Dial connects to the bus for reading and applying, and says in the mesh's words why it could
// not: refused credentials and a server that is not there need different fixes.
func Dial(url string, opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{
		nats.Name("meshc apply"),
		nats.Timeout(5 * time.Second),
		// A cluster node restarting mid-apply is survived by moving to another; the retries in
		// apply cover the requests lost meanwhile.
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
	}, opts...)
	nc, err := nats.Connect(url, opts...)
	switch {
	case err == nil:
		return nc, nil
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
		return nil, fmt.Errorf("connect to %s: %w: the server refused these credentials; apply as mesh-controller with the password minted for it (meshc mint mesh-controller), and check the server has loaded the current user list", url, err)
	case errors.Is(err, nats.ErrNoServers):
		return nil, fmt.Errorf("connect to %s: %w: no NATS server answers there; check the address and that the server is running (meshc up starts one)", url, err)
	}
	return nil, fmt.Errorf("connect to %s: %w", url, err)
}
