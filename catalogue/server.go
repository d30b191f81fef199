package catalogue

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// What the server accepts, decided once: lint reports what emit would refuse with these same
// functions, so a catalogue never passes pre-commit only to fail in CI.

// accountName is what an account name may hold. The config format does not process escapes in
// a quoted map key (`"A\"B"` fails to parse: docs/nats.md, "Config quoting"), so a name that would
// need one is refused rather than written.
var accountName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ValidAccountName reports whether name can be written as an account name in accounts.conf.
func ValidAccountName(name string) bool { return accountName.MatchString(name) }

// serverBcrypt is the server's own test for "this password is a bcrypt hash"
// (server/auth.go validBcryptPrefix), ^\$2[abxy]\$\d{2}\$: anything else it compares as a
// plaintext password. A byte loop, held to the expression by TestServerBcryptIsItsExpression:
// emit asks it of every user.
func serverBcrypt(h string) bool {
	return len(h) >= 7 && h[0] == '$' && h[1] == '2' && strings.IndexByte("abxy", h[2]) >= 0 && h[3] == '$' &&
		h[4] >= '0' && h[4] <= '9' && h[5] >= '0' && h[5] <= '9' && h[6] == '$'
}

// CheckHash accepts a bcrypt hash the server will also recognise as one. A bogus hash passes
// both `nats-server -t` and NewServer (docs/nats.md, "Validating a configuration"), and "$2$04$…"
// is a hash to Go's bcrypt but a plaintext password to the server: both tests are needed.
func CheckHash(h string) error {
	if !serverBcrypt(h) {
		return errors.New("is not a bcrypt hash (it does not start $2a$, $2b$, $2x$ or $2y$ and a two-digit cost)")
	}
	if _, err := bcrypt.Cost([]byte(h)); err != nil {
		return fmt.Errorf("is not a bcrypt hash (%v)", err)
	}
	return nil
}
