package catalogue

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// serverBcrypt accepts exactly what the server's expression does: random strings near a hash's
// prefix.
func TestServerBcryptIsItsExpression(t *testing.T) {
	expr := regexp.MustCompile(`^\$2[abxy]\$\d{2}\$`)
	rng := rand.New(rand.NewPCG(13, 14))
	const letters = "$2abxyz0169"
	for range 50_000 {
		b := []byte("$2a$06$")[:rng.IntN(8)]
		b = append([]byte{}, b...)
		for range rng.IntN(4) {
			b = append(b, letters[rng.IntN(len(letters))])
		}
		if i := rng.IntN(len(b) + 1); i < len(b) {
			b[i] = letters[rng.IntN(len(letters))]
		}
		if got, want := serverBcrypt(string(b)), expr.MatchString(string(b)); got != want {
			t.Fatalf("serverBcrypt(%q) = %v, the expression says %v", b, got, want)
		}
	}
}
