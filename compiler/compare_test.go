package compiler

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
)

// compileChanged compiles small.txtar with some of its files replaced.
func compileChanged(t *testing.T, files map[string]string) *Plan {
	t.Helper()
	dir := cataloguetest.Extract(t, "testdata/small.txtar")
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, loaded, err := catalogue.Load(dir)
	if err != nil || len(loaded) > 0 {
		t.Fatalf("%v %v", err, loaded)
	}
	p, _ := Compile(catalogue.NewIndex(c))
	return p
}

func changeOf(ucs []UserChange, user string) *UserChange {
	i := slices.IndexFunc(ucs, func(u UserChange) bool { return u.User == user })
	if i < 0 {
		return nil
	}
	return &ucs[i]
}

func TestCompareUsers(t *testing.T) {
	base, _ := compileArchive(t, "testdata/small.txtar")

	// Quiet: a plan compared with itself changes no user.
	if got := CompareUsers(base, base); len(got) != 0 {
		t.Fatalf("a plan against itself: %+v", got)
	}

	head := compileChanged(t, map[string]string{
		// carol is new and may call everything; bob is gone.
		"inventory.yaml": "nodes:\n  - {name: anchor, runs: [registry, catalog, builder]}\n  - {name: laptop, runs: [audit], enrolling: true}\n" +
			"people:\n  - {name: carol, may-call: [\"*\"]}\n  - {name: alice, may-call: [\"*\", catalog.lookup]}\n",
		// audit stops calling catalog.lookup and starts serving a tool.
		"modules/audit.yaml": "module: audit\nconsumes: [\"**\", catalog.upgraded]\ntools: [replay]\n",
	})
	got := CompareUsers(base, head)

	carol := changeOf(got, "person.carol")
	if carol == nil || !carol.Added || len(carol.Lost) != 0 {
		t.Fatalf("carol: %+v", carol)
	}
	i := slices.IndexFunc(carol.Gained, func(g GrantChange) bool { return g.Subject == "mesh.mod.*.tool.*" })
	if i < 0 || !slices.Contains(carol.Gained[i].Widening, "a new person") || !slices.Contains(carol.Gained[i].Widening, "a wildcard") ||
		carol.Gained[i].Because[0].Source.File != "inventory.yaml" {
		t.Errorf("carol's every-tool grant: %+v", carol.Gained)
	}
	// Her inbox is hers: gained, but not called a wildcard.
	for _, g := range carol.Gained {
		if g.Subject == "_INBOX.person.carol.>" && slices.Contains(g.Widening, "a wildcard") {
			t.Errorf("her own inbox called a wildcard: %+v", g)
		}
	}

	bob := changeOf(got, "person.bob")
	if bob == nil || !bob.Removed || len(bob.Lost) == 0 || len(bob.Gained) != 0 {
		t.Errorf("bob: %+v", bob)
	}

	audit := changeOf(got, "mod.laptop.audit")
	if audit == nil || audit.Added || audit.Removed || len(audit.Gained) != 0 {
		t.Fatalf("audit: %+v", audit)
	}
	var gained, lost []string
	for _, g := range audit.Lost {
		lost = append(lost, g.Action+" "+g.Subject)
	}
	if !slices.Equal(lost, []string{"pub mesh.mod.catalog.tool.lookup"}) || audit.Lost[0].Because[0].Because != "calls catalog.lookup" {
		t.Errorf("audit lost %v %+v", lost, audit.Lost)
	}
	// Serving its tool is its serving user's, new.
	server := changeOf(got, "serve.laptop.audit")
	if server == nil || !server.Added || len(server.Lost) != 0 {
		t.Fatalf("audit's serving user: %+v", server)
	}
	for _, g := range server.Gained {
		gained = append(gained, g.Action+" "+g.Subject)
	}
	if !slices.Equal(gained, []string{"pub _R_.>", "sub mesh.mod.audit.tool.replay audit"}) {
		t.Errorf("audit's serving user gained %v", gained)
	}
	// Its own tool is its own subject, and the server's replies its own answers: no widening.
	for _, g := range server.Gained {
		if len(g.Widening) > 0 {
			t.Errorf("audit's own tool called widening: %+v", g)
		}
	}

	// alice is unchanged, and so is everyone else.
	for _, uc := range got {
		if !strings.Contains("person.carol person.bob mod.laptop.audit serve.laptop.audit", uc.User) {
			t.Errorf("unexpected change for %s: %+v", uc.User, uc)
		}
	}

	// A module that starts calling another module's tool gains a grant on that module's subject.
	head = compileChanged(t, map[string]string{"modules/builder.yaml": "module: builder\nclaims: [mesh-build-machine]\nuses: [image-store]\ncalls: [catalog.lookup]\n"})
	b := changeOf(CompareUsers(base, head), "mod.anchor.builder")
	if b == nil || len(b.Gained) != 1 || !slices.Equal(b.Gained[0].Widening, []string{"module catalog's subject"}) {
		t.Errorf("builder calling catalog: %+v", b)
	}
}
