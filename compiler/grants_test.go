package compiler

import (
	"slices"
	"strings"
	"testing"
)

// Every subject a user is given comes from a grant that names its declaration, and every grant
// is in the permission: the explanation and the permission cannot drift apart.
func TestEveryPermissionHasItsGrants(t *testing.T) {
	p, _ := compileArchive(t, "testdata/small.txtar")
	for _, u := range p.Users {
		for _, side := range []struct {
			action Action
			perm   Permission
		}{{Publish, u.Publish}, {Subscribe, u.Subscribe}} {
			var subjects []string
			for _, g := range u.grants(side.action) {
				if g.Source.File == "" || g.Because == "" {
					t.Errorf("%s %s %s: a grant without its declaration: %+v", u.Name, side.action, g.Subject, g)
				}
				subjects = append(subjects, g.Permission())
			}
			if got := permission(subjects); !slices.Equal(got.Allow, side.perm.Allow) || !slices.Equal(got.Deny, side.perm.Deny) {
				t.Errorf("%s %s: grants make %+v, the permission is %+v", u.Name, side.action, got, side.perm)
			}
		}
		if u.AllowResponses != (len(u.Grants.Responses) > 0) {
			t.Errorf("%s: allow_responses %v with response grants %v", u.Name, u.AllowResponses, u.Grants.Responses)
		}
	}
}

func TestWhyNamesTheDeclaration(t *testing.T) {
	p, _ := compileArchive(t, "testdata/small.txtar")
	audit := user(t, p, "mod.laptop.audit")
	why := audit.Why(Publish, "mesh.mod.catalog.tool.lookup")
	if len(why) != 1 || why[0].Because != "calls catalog.lookup" || why[0].Source.File != "modules/audit.yaml" || why[0].Source.Line != 3 {
		t.Errorf("audit publishing catalog.lookup: %+v", why)
	}
	// Quiet: what it does not declare has no grant.
	if why := audit.Why(Publish, "mesh.mod.catalog.event.upgraded"); len(why) != 0 {
		t.Errorf("audit may publish catalog's event: %+v", why)
	}
	// alice's "*" and her catalog.lookup both cover lookup; both reasons are kept.
	alice := user(t, p, "person.alice")
	if why := alice.Why(Publish, "mesh.mod.catalog.tool.lookup"); len(why) != 2 {
		t.Errorf("alice publishing catalog.lookup: %+v", why)
	}
	// A wildcard asked about is covered only by a grant as wide.
	if why := alice.Why(Publish, "mesh.mod.*.tool.*"); len(why) != 1 || why[0].Because != "may-call every tool" {
		t.Errorf("alice publishing every tool: %+v", why)
	}
	bob := user(t, p, "person.bob")
	if why := bob.Why(Publish, "mesh.mod.*.tool.*"); len(why) != 0 {
		t.Errorf("bob publishing every tool: %+v", why)
	}
	// A tool is served in its module's queue group only: a plain subscription is not granted.
	catalog := user(t, p, "serve.anchor.catalog")
	if why := catalog.Why(Subscribe, "mesh.mod.catalog.tool.lookup catalog"); len(why) != 1 || why[0].Because != "serves tool lookup in queue group catalog" {
		t.Errorf("catalog subscribing its tool in its queue group: %+v", why)
	}
	for _, plain := range []string{"mesh.mod.catalog.tool.lookup", "mesh.mod.catalog.tool.lookup other"} {
		if why := catalog.Why(Subscribe, plain); len(why) != 0 {
			t.Errorf("catalog may subscribe %q: %+v", plain, why)
		}
	}
}

// Asked about a tool it serves without its queue group, a serving user is told the group it must
// use.
func TestNearestNamesTheQueueGroup(t *testing.T) {
	p, _ := compileArchive(t, "testdata/small.txtar")
	catalog := user(t, p, "serve.anchor.catalog")
	for subject, want := range map[string]string{
		"mesh.mod.catalog.tool.lookup":       `only as a subscription in queue group catalog (ask about "mesh.mod.catalog.tool.lookup catalog")`,
		"mesh.mod.catalog.tool.lookup other": "only in queue group catalog, not other",
	} {
		if _, why, ok := catalog.Nearest(Subscribe, subject); !ok || !strings.Contains(why, want) {
			t.Errorf("%s: %q, want %q", subject, why, want)
		}
	}
}

func TestNearestSaysWhyNot(t *testing.T) {
	p, _ := compileArchive(t, "testdata/small.txtar")
	bob := user(t, p, "person.bob")
	for _, tc := range []struct{ subject, grant, why string }{
		{"mesh.mod.catalog.tool.search", "mesh.mod.catalog.tool.lookup", `token 5 is "search"`},
		{"mesh.mod.catalog.tool", "mesh.mod.catalog.tool.lookup", "is shorter than"},
		{"mesh.mod.catalog.tool.lookup.x", "mesh.mod.catalog.tool.lookup", "is longer than"},
		{"mesh.mod.*.tool.lookup", "mesh.mod.catalog.tool.lookup", `the wildcard "*"`},
		{"_INBOX.x", "", "starts with _INBOX, so none comes close"},
	} {
		g, why, ok := bob.Nearest(Publish, tc.subject)
		if !ok || (tc.grant != "" && g.Subject != tc.grant) || !strings.Contains(why, tc.why) {
			t.Errorf("%s: nearest %s, %q, want %s and %q", tc.subject, g.Subject, why, tc.grant, tc.why)
		}
	}
	// A user with nothing to publish has no nearest grant.
	if _, _, ok := (&User{Name: "x"}).Nearest(Publish, "a"); ok {
		t.Error("a user with no grants has a nearest one")
	}
}
