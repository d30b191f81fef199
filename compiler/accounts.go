package compiler

import (
	"maps"
	"slices"
	"strings"
)

// Account isolation (mesh.yaml `isolation: account-per-module`; docs/nats.md, "Accounts, exports
// and imports").
//
// Within one account, whoever may make a request chooses where the answer goes, and the server
// publishes it there unchecked (docs/nats.md, "A requester chooses where the answer goes"): a
// pull's messages onto another module's tool, a tool's answer into a seat's work queue, an empty
// answer into the JetStream API. Across accounts the server rewrites every reply that travels
// through an import, so none of that lands. In this mode the mesh's account keeps JetStream and the
// controller — an existing bus keeps its streams and consumers — and every other user gets an
// account of its own, named like the user, holding exactly the imports its permissions use. An
// answer that arrives in an account follows the account's imports without a per-user check, so the
// imports must be the grants, no more: one account per module instance, never one shared by a
// module's instances (docs/nats.md, "What accounts do not block").

// Account is one account of an isolated mesh: its users, what it offers other accounts and what
// it takes from them.
type Account struct {
	Name string
	// JetStream is true for the mesh's account alone: a module's account with JetStream of its
	// own would answer its users' pulls and info requests from an empty store (docs/nats.md,
	// "Traps").
	JetStream bool
	// Users are the usernames living in the account.
	Users []string
	// Exports sorted by subject; Imports sorted by subject, then source account.
	Exports []Export
	Imports []Import
}

// ExportKind says how a subject crosses from one account to another.
type ExportKind string

const (
	// ServiceExport: a request crosses and its answer comes back, rewritten to `_R_.…` on the way so
	// the requester cannot aim it (events and work are services so the PubAck returns).
	ServiceExport ExportKind = "service"
	// StreamExport: messages published in the exporting account are delivered in the importing one.
	StreamExport ExportKind = "stream"
)

// Export is one subject an account offers, to the accounts named and no others.
type Export struct {
	Kind    ExportKind
	Subject string
	// ResponseStream is set for a service answered by more than one message (a pull of a batch):
	// a singleton export delivers the first and strands the rest until AckWait (docs/nats.md,
	// "Traps").
	ResponseStream bool
	Accounts       []string
}

// Import is one subject an account takes from another, always naming the account it comes from.
type Import struct {
	Kind    ExportKind
	Subject string
	Account string
}

// meshExport is one subject kind the mesh's account exports. One wildcard per kind, imported by
// exact subjects: the server's load time is quadratic in one account's service exports, so an
// export per subject takes seconds at a few thousand modules, and the imports already decide
// what is connected (docs/nats.md, "Reload and scale with many accounts").
type meshExport struct {
	kind           ExportKind
	subject        string
	responseStream bool
}

// meshExports are the kinds of the table in docs/nats.md, "What each flow needs", in the order they
// are written.
var meshExports = []meshExport{
	{ServiceExport, ModuleEvent("*", ">"), false},
	{ServiceExport, SeatEvent("*", ">"), false},
	{ServiceExport, Work("*", "*"), false},
	{ServiceExport, Report("*"), false},
	{ServiceExport, Heartbeat("*"), false},
	{ServiceExport, Enrolment("*"), false},
	{ServiceExport, PullNext("*", "*"), true},
	{ServiceExport, ConsumerInfo("*", "*"), false},
	{ServiceExport, AllAcks, false},
	{ServiceExport, JetStreamInfo, false},
	{StreamExport, DeliverNodes("*"), false},
	{StreamExport, EnrolmentAnswers("*"), false},
}

// meshExportFor returns the index of the mesh export of kind covering subject, or -1.
func meshExportFor(kind ExportKind, subject string) int {
	for i, e := range meshExports {
		if e.kind == kind && Covers(e.subject, subject) {
			return i
		}
	}
	return -1
}

// isTool reports whether a publish grant is a tool call (a tool, or `*`'s every tool).
func isTool(subject string) bool { return Covers(Tool("*", "*"), subject) }

// isolate derives the accounts of a mesh with an account per principal from the users' own
// permissions, which are left as they are: each import is one of its user's grants, and each
// grant that reaches another account is an import. A grant nothing serves (a call to a tool no
// running module serves) imports nothing, as in one account it reaches nobody.
func (c *compilation) isolate() {
	p := c.plan
	for i := range p.Users {
		p.Users[i].Account = p.Account
	}
	if !c.ix.Catalogue.Mesh.PerModule() {
		return
	}

	// Who serves each tool: its subject, to the accounts of every instance serving it.
	servers := map[string][]string{}
	for _, u := range p.Users {
		if u.Kind == KindController {
			continue
		}
		for _, s := range u.Subscribe.Allow {
			if isTool(s) {
				servers[s] = append(servers[s], AccountName(u.Name))
			}
		}
	}
	tools := slices.Sorted(maps.Keys(servers))

	meshImporters := make([][]string, len(meshExports))
	// callers[server account][tool] are the accounts importing that tool from that server.
	callers := map[string]map[string][]string{}
	mesh := Account{Name: p.Account, JetStream: true}
	accounts := make([]Account, 0, len(p.Users))
	for i := range p.Users {
		u := &p.Users[i]
		if u.Kind == KindController {
			mesh.Users = append(mesh.Users, u.Name)
			continue
		}
		a := Account{Name: AccountName(u.Name), Users: []string{u.Name}}
		u.Account = a.Name
		fromMesh := func(kind ExportKind, subject string, e int) {
			a.Imports = append(a.Imports, Import{Kind: kind, Subject: subject, Account: p.Account})
			meshImporters[e] = append(meshImporters[e], a.Name)
		}
		fromServer := func(tool, server string) {
			if server == a.Name {
				return // its own tool: served in its own account
			}
			a.Imports = append(a.Imports, Import{Kind: ServiceExport, Subject: tool, Account: server})
			if callers[server] == nil {
				callers[server] = map[string][]string{}
			}
			callers[server][tool] = append(callers[server][tool], a.Name)
		}
		for _, s := range u.Publish.Allow {
			switch {
			case isTool(s) && !strings.ContainsAny(s, "*>"):
				for _, server := range servers[s] {
					fromServer(s, server)
				}
			case isTool(s):
				for _, t := range tools {
					if Covers(s, t) {
						for _, server := range servers[t] {
							fromServer(t, server)
						}
					}
				}
			default:
				if e := meshExportFor(ServiceExport, s); e >= 0 {
					fromMesh(ServiceExport, s, e)
				}
			}
		}
		for _, s := range u.Subscribe.Allow {
			if e := meshExportFor(StreamExport, s); e >= 0 {
				fromMesh(StreamExport, s, e)
			}
		}
		// Never granted to the user: it only keeps the server from answering twice (docs/nats.md,
		// "Traps").
		fromMesh(ServiceExport, JetStreamInfo, meshExportFor(ServiceExport, JetStreamInfo))
		accounts = append(accounts, a)
	}

	for e, importers := range meshImporters {
		if len(importers) == 0 {
			continue
		}
		x := meshExports[e]
		mesh.Exports = append(mesh.Exports, Export{Kind: x.kind, Subject: x.subject, ResponseStream: x.responseStream, Accounts: sortedSet(importers)})
	}
	slices.SortFunc(mesh.Exports, func(x, y Export) int { return strings.Compare(x.Subject, y.Subject) })
	for i := range accounts {
		a := &accounts[i]
		for tool, to := range callers[a.Name] {
			a.Exports = append(a.Exports, Export{Kind: ServiceExport, Subject: tool, Accounts: sortedSet(to)})
		}
		slices.SortFunc(a.Exports, func(x, y Export) int { return strings.Compare(x.Subject, y.Subject) })
		slices.SortFunc(a.Imports, func(x, y Import) int {
			if c := strings.Compare(x.Subject, y.Subject); c != 0 {
				return c
			}
			return strings.Compare(x.Account, y.Account)
		})
		a.Imports = slices.Compact(a.Imports)
	}
	p.Accounts = append([]Account{mesh}, accounts...)
}

func sortedSet(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
