package benchmarks

import (
	"fmt"
	"os"
	"testing"

	"github.com/nats-io/jwt/v2"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/operator"
)

// BenchmarkOperatorChange is what apply decides for one change in operator mode, beside its floor:
// a person gains a tool, and the resolver holds every other account as the catalogue derives it.
//
//   - impl=floor: what no delivery can do without — load and compile the catalogue, and read what
//     the resolver holds (decode every account JWT of a pack);
//   - impl=meshc: that, and what apply's delivery adds — derive every account's claims, read both
//     sides into principals, diff them, and sign the one account that differs.
//
// The push itself is one request per account that differs (about a millisecond: docs/nats.md,
// "Operator mode"), the same for any mesh size.
//
// CI's one run of every benchmark runs it at 1,000 modules; 10,000 with MESHC_BENCH_FULL=1:
//
//	MESHC_BENCH_FULL=1 go test ./benchmarks -run '^$' -bench OperatorChange -benchtime 3x -count 4
func BenchmarkOperatorChange(b *testing.B) {
	sizes := []int{1000}
	if os.Getenv(fullSizesVar) == "1" {
		sizes = append(sizes, 10_000)
	}
	for _, n := range sizes {
		// Each size sets up inside its own b.Run: -bench 'OperatorChange/n=10000' sets up that
		// one alone.
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchmarkOperatorChange(b, n) })
	}
}

// benchmarkOperatorChange is BenchmarkOperatorChange at n modules.
func benchmarkOperatorChange(b *testing.B, n int) {
	dir := writeCatalogue(b, n)
	f := newOpFixture(b, n, catalogue.IsolationPerModule)
	claims, err := f.plan.Claims()
	if err != nil {
		b.Fatal(err)
	}
	// What the resolver holds: the catalogue's every account, signed.
	var pack []string
	for _, a := range claims {
		token, err := operator.EncodeAccount(a.Claims, f.op.Signing, 0)
		if err != nil {
			b.Fatal(err)
		}
		pack = append(pack, token)
	}
	load := func(b *testing.B) *compiler.Plan {
		c, _, err := catalogue.Load(dir)
		if err != nil {
			b.Fatal(err)
		}
		c.Mesh.Isolation.Value, c.Mesh.Auth.Value = catalogue.IsolationPerModule, catalogue.AuthOperator
		plan, _ := compiler.Compile(catalogue.NewIndex(c))
		// The keys the fixture recorded, and one person who may call one tool more.
		plan.Operator = f.plan.Operator
		for i := range plan.Users {
			plan.Users[i].SigningKey = f.plan.User(plan.Users[i].Name).SigningKey
		}
		return plan
	}
	read := func(b *testing.B) []*jwt.AccountClaims {
		out := make([]*jwt.AccountClaims, len(pack))
		for i, token := range pack {
			if out[i], err = jwt.DecodeAccountClaims(token); err != nil {
				b.Fatal(err)
			}
		}
		return out
	}
	b.Run("impl=floor", func(b *testing.B) {
		for b.Loop() {
			load(b)
			read(b)
		}
	})
	b.Run("impl=meshc", func(b *testing.B) {
		changed := 0
		for b.Loop() {
			plan := load(b)
			person := personOf(b, plan)
			person.Publish.Allow = append(person.Publish.Allow, "mesh.mod.x.tool.y")
			held := read(b)
			cl, err := plan.Claims()
			if err != nil {
				b.Fatal(err)
			}
			want := change.WantedOf(plan, cl)
			for _, ac := range held {
				ac.Issuer = plan.Operator.SigningKey
			}
			cs := change.DiffPrincipals(change.FromClaims(held, plan, "the resolver"), want, plan.Account)
			changed = 0
			for _, c := range cs {
				if c.Action != change.NoOp {
					changed++
				}
			}
			// The one account that differs, signed (the user's change is a scope of it).
			for _, a := range cl {
				if a.Name == person.Account {
					if _, err := operator.EncodeAccount(a.Claims, f.op.Signing, 0); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		b.ReportMetric(float64(changed), "changes")
	})
}

// personOf is a person of the plan, to change.
func personOf(b *testing.B, plan *compiler.Plan) *compiler.User {
	for i := range plan.Users {
		if plan.Users[i].Kind == compiler.KindPerson {
			return &plan.Users[i]
		}
	}
	b.Fatal("the synthetic mesh has no person")
	return nil
}
