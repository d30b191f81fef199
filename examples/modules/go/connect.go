package main

import (
	"log"
	"os"

	"github.com/nats-io/nats.go"
)

// connect connects to the bus as the module's user on this machine, mod.<machine>.<module>: the
// connection the module publishes, consumes, calls tools and takes seat work on. Its credential
// is in NATS_PASSWORD, NATS_NKEY or NATS_CREDS (dial).
func connect(module string) (*nats.Conn, error) {
	user := "mod." + os.Getenv("MESH_MACHINE") + "." + module
	// The bus lets this user receive replies in _INBOX.<user>.> and nowhere else: without this
	// prefix every request (a call, a pull, a publish awaiting its ack) times out.
	return dial(user, "NATS_", nats.CustomInboxPrefix("_INBOX."+user))
}

// dial connects as user with the credential its deployment was given, read from the environment
// variable prefix+PASSWORD (auth: password), prefix+NKEY, an nkey seed file (auth: nkey), or
// prefix+CREDS, a credentials file (auth: operator).
func dial(user, prefix string, opts ...nats.Option) (*nats.Conn, error) {
	opts = append(opts,
		nats.Name(user),
		// A refusal arrives on its own, not as the failing call's error (which is a timeout):
		// say it where it can be read.
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { log.Printf("bus: %s: %v", user, err) }),
	)
	switch {
	case os.Getenv(prefix+"CREDS") != "":
		opts = append(opts, nats.UserCredentials(os.Getenv(prefix+"CREDS")))
	case os.Getenv(prefix+"NKEY") != "":
		seed, err := nats.NkeyOptionFromSeed(os.Getenv(prefix + "NKEY"))
		if err != nil {
			return nil, err
		}
		opts = append(opts, seed)
	default:
		opts = append(opts, nats.UserInfo(user, os.Getenv(prefix+"PASSWORD")))
	}
	return nats.Connect(os.Getenv("NATS_URL"), opts...)
}
