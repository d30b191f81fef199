package main

import (
	"log"
	"os"

	"github.com/nats-io/nats.go"
)

// connect connects to the bus as the module's user on this machine, mod.<machine>.<module>, with
// the credential its deployment was given: a password (auth: password), an nkey seed file
// (auth: nkey) or a credentials file (auth: operator).
func connect(module string) (*nats.Conn, error) {
	user := "mod." + os.Getenv("MESH_MACHINE") + "." + module
	opts := []nats.Option{
		nats.Name(user),
		// The bus lets this user receive replies in _INBOX.<user>.> and nowhere else: without
		// this prefix every request (a call, a pull, a publish awaiting its ack) times out.
		nats.CustomInboxPrefix("_INBOX." + user),
		// A refusal arrives on its own, not as the failing call's error (which is a timeout):
		// say it where it can be read.
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { log.Printf("bus: %v", err) }),
	}
	switch {
	case os.Getenv("NATS_CREDS") != "":
		opts = append(opts, nats.UserCredentials(os.Getenv("NATS_CREDS")))
	case os.Getenv("NATS_NKEY") != "":
		seed, err := nats.NkeyOptionFromSeed(os.Getenv("NATS_NKEY"))
		if err != nil {
			return nil, err
		}
		opts = append(opts, seed)
	default:
		opts = append(opts, nats.UserInfo(user, os.Getenv("NATS_PASSWORD")))
	}
	return nats.Connect(os.Getenv("NATS_URL"), opts...)
}
