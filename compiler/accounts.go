package compiler

import (
	"slices"
	"strings"
)

// Account isolation (mesh.yaml `isolation: account-per-module`, the default; docs/nats.md,
// "Accounts, exports and imports").
//
// Within one account, whoever may make a request chooses where the answer goes, and the server
// publishes it there unchecked (docs/nats.md, "A requester chooses where the answer goes"): a
// pull's messages onto another module's tool, a tool's answer into a seat's work queue, an empty
// answer into the JetStream API. Across accounts the server rewrites every reply that travels
// through an import, so none of that lands. In this mode the mesh's account keeps JetStream and
// the controller — an existing bus keeps its streams and consumers — and every other user gets an
// account of its own named like the user, a module's instances included; the serving users of a
// module's instances share one account, the module's, from which every caller imports its tools.
// An answer that arrives in an account follows the account's imports without a per-user check,
// so an account imports exactly its users' grants, no more (docs/nats.md, "What accounts do not
// block").
//
// Why the tools apart: a subject imported from several accounts is delivered to every one of
// them, so a tool served from each instance's account was served by every instance; served from
// one account, the serving users' queue subscriptions compete there and each call is served
// once. Why an account per instance: instances sharing an account share its imports and receive
// whatever an answer brings into it, so one instance could aim the answer to any request it made
// — its own call to its module's tool, answered by itself — at its sibling's pull inbox, or a
// pull's messages at its sibling's consumer (docs/nats.md, "An account per instance, the tools
// apart").

// Account is one account of an isolated mesh: its users, what it offers other accounts and what
// it takes from them.
type Account struct {
	Name string
	// Kind is whose the account is: the mesh's, a module's, one principal's, or a tool hub.
	Kind AccountKind
	// JetStream is true for the mesh's account alone: a module's account with JetStream of its
	// own would answer its users' pulls and info requests from an empty store (docs/nats.md,
	// "Traps").
	JetStream bool
	// Users are the usernames living in the account.
	Users []string
	// Exports sorted by subject; Imports sorted by subject, then source account.
	Exports []Export
	Imports []Import
	// Limits bound what its users hold on the server; JetStreamLimits, for the account with
	// JetStream, what it stores (limits.go).
	Limits          AccountLimits
	JetStreamLimits JetStreamLimits
}

// AccountKind is whose an account is, recorded when the account is derived so no pass reads it
// back out of the account's name or shape.
type AccountKind string

const (
	// AccountMesh is the mesh's own account: JetStream and the controller, and in one account
	// every user.
	AccountMesh AccountKind = "mesh"
	// AccountModule is a module's: its tools, served by its instances' serving users.
	AccountModule AccountKind = "module"
	// AccountInstance, AccountNode, AccountEnrolment and AccountPerson are one principal's,
	// named like its user: a module's instance, a machine, an enrolling machine, a person.
	AccountInstance  AccountKind = "instance"
	AccountNode      AccountKind = "node"
	AccountEnrolment AccountKind = "enrolment"
	AccountPerson    AccountKind = "person"
	// AccountHub is a tool hub of operator mode: no users, every tool of its share of the
	// serving accounts (compiler/operator.go).
	AccountHub AccountKind = "hub"
)

// accountKind is the kind of the account a user of kind k lives in, with an account per module.
func accountKind(k UserKind) AccountKind {
	switch k {
	case KindServer:
		return AccountModule
	case KindModule:
		return AccountInstance
	case KindNode:
		return AccountNode
	case KindEnrolment:
		return AccountEnrolment
	case KindPerson:
		return AccountPerson
	}
	return AccountMesh
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
	// Module is the module whose tool this is, "" for any other subject: recorded as derived,
	// so the JWT form, which exports and imports a module's tools as one wildcard, never reads
	// it back out of the subject.
	Module string
}

// Import is one subject an account takes from another, always naming the account it comes from.
type Import struct {
	Kind    ExportKind
	Subject string
	Account string
	// Module is the module whose tools this brings, "" for any other subject (see Export).
	Module string
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
var meshExports = [...]meshExport{
	{ServiceExport, ModuleEvent("*", ">"), false},
	{ServiceExport, SeatEvent("*", ">"), false},
	{ServiceExport, Work("*", "*"), false},
	{ServiceExport, Report("*"), false},
	{ServiceExport, Heartbeat("*"), false},
	{ServiceExport, Enrolment("*"), false},
	// Before JetStreamSubjects, which covers it: $JS.API.INFO has one answer.
	{ServiceExport, JetStreamInfo, false},
	{ServiceExport, JetStreamSubjects, true},
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

// jetStreamInfoExport is the mesh export every account imports.
var jetStreamInfoExport = meshExportFor(ServiceExport, JetStreamInfo)

// accountOf is the account a user other than the controller lives in: its module's for a
// serving user, its own for every other principal.
func accountOf(u *User) string {
	if u.Kind == KindServer {
		return ModuleAccount(u.Module)
	}
	return AccountName(u.Name)
}

// isolate derives the accounts of a mesh with an account per principal from the users' own
// permissions, which are left as they are: each import is one of its users' grants, and each
// grant that reaches another account is an import. A grant nothing serves (a call to a tool no
// running module serves) imports nothing, as in one account it reaches nobody.
//
// A module's serving users share its account: their queue subscriptions to its tools compete
// there, so a call is served by one instance. Every caller imports each tool from that one
// account, a module's own instances too: the module's account imports nothing, so no import
// comes back in a cycle.
func (c *compilation) isolate() {
	p := c.plan
	for i := range p.Users {
		p.Users[i].Account = p.Account
	}
	if !c.ix.Catalogue.Mesh.PerModule() {
		return
	}
	// One account name per module, not one string per serving user.
	moduleAccounts := map[string]string{}
	others := 0 // accounts of one user each
	for i := range p.Users {
		u := &p.Users[i]
		switch {
		case u.Kind == KindController, u.Kind == KindPlanner:
		case u.Kind == KindServer:
			a, ok := moduleAccounts[u.Module]
			if !ok {
				a = accountOf(u)
				moduleAccounts[u.Module] = a
			}
			u.Account = a
		default:
			u.Account = accountOf(u)
			others++
		}
	}

	// The accounts in order of their first user, each with its users.
	mesh := Account{Name: p.Account, Kind: AccountMesh, JetStream: true}
	// Sized once: an account is a few hundred bytes, and there are thousands.
	naccounts := len(moduleAccounts) + others
	accounts := make([]Account, 0, naccounts)
	members := make([][]int, 0, naccounts) // members[account]: its users' indices
	at := make(map[string]int, naccounts)  // account name → index in accounts
	for i := range p.Users {
		u := &p.Users[i]
		if u.Kind == KindController || u.Kind == KindPlanner {
			mesh.Users = append(mesh.Users, u.Name)
			continue
		}
		k, ok := at[u.Account]
		if !ok {
			k = len(accounts)
			at[u.Account] = k
			accounts = append(accounts, Account{Name: u.Account, Kind: accountKind(u.Kind)})
			members = append(members, nil)
		}
		accounts[k].Users = append(accounts[k].Users, u.Name)
		members[k] = append(members[k], i)
	}

	// What each account's users' grants import, worked out for every account at once: matching
	// every grant against the exports and tools is most of this. An account's imports are its
	// users' in user order, whichever account finished first.
	fromMesh := make([][len(meshExports)]bool, len(accounts)) // the mesh exports each imports
	fromTools := make([][]Import, len(accounts))              // the tools each imports
	inParallel(len(accounts), func(k int) {
		a := &accounts[k]
		// Nearly every grant is an import, and each account imports JetStream's INFO: sized
		// once, where growing thousands of lists by doubling was most of what this allocated.
		n := 0
		for _, i := range members[k] {
			n += len(p.Users[i].Publish.Allow) + len(p.Users[i].Subscribe.Allow) + 1
		}
		a.Imports = make([]Import, 0, n)
		importFromMesh := func(kind ExportKind, subject string, e int) {
			a.Imports = append(a.Imports, Import{Kind: kind, Subject: subject, Account: p.Account})
			fromMesh[k][e] = true
		}
		for _, i := range members[k] {
			u := &p.Users[i]
			// A call to a tool nobody running serves imports nothing; a tool is served in an
			// account where nobody calls (its module's serving users').
			for _, t := range c.called(u) {
				if t.Account != a.Name {
					a.Imports = append(a.Imports, Import{Kind: ServiceExport, Subject: t.Subject, Account: t.Account, Module: t.Module})
					fromTools[k] = append(fromTools[k], a.Imports[len(a.Imports)-1])
				}
			}
			// Every other grant reaching the mesh's account is an import of the export of its
			// kind; a tool is in none of them.
			for _, s := range u.Publish.Allow {
				if e := meshExportFor(ServiceExport, s); e >= 0 {
					importFromMesh(ServiceExport, s, e)
				}
			}
			for _, s := range u.Subscribe.Allow {
				if e := meshExportFor(StreamExport, s); e >= 0 {
					importFromMesh(StreamExport, s, e)
				}
			}
			// Never granted to a user: it only keeps the server from answering a JetStream request
			// twice (docs/nats.md, "Traps"), so only an account whose users make one imports it.
			// Anywhere else it let a requester aim a colluding tool server's answer at it and
			// have the mesh account's usage delivered to the colluder.
			if u.jetStream {
				importFromMesh(ServiceExport, JetStreamInfo, jetStreamInfoExport)
			}
		}
	})
	// callers[server account][tool] are the accounts importing that tool from that server.
	callers := map[string]map[string][]string{}
	for k, imports := range fromTools {
		for _, im := range imports {
			if callers[im.Account] == nil {
				callers[im.Account] = map[string][]string{}
			}
			callers[im.Account][im.Subject] = append(callers[im.Account][im.Subject], accounts[k].Name)
		}
	}

	// Each mesh export names its importers sorted: the accounts taken in name order once.
	byName := make([]int, len(accounts))
	for k := range byName {
		byName[k] = k
	}
	slices.SortFunc(byName, func(x, y int) int { return strings.Compare(accounts[x].Name, accounts[y].Name) })
	for e, x := range meshExports {
		n := 0
		for k := range fromMesh {
			if fromMesh[k][e] {
				n++
			}
		}
		importers := make([]string, 0, n)
		for _, k := range byName {
			if fromMesh[k][e] {
				importers = append(importers, accounts[k].Name)
			}
		}
		if n > 0 {
			mesh.Exports = append(mesh.Exports, Export{Kind: x.kind, Subject: x.subject, ResponseStream: x.responseStream, Accounts: importers})
		}
	}
	slices.SortFunc(mesh.Exports, func(x, y Export) int { return strings.Compare(x.Subject, y.Subject) })
	inParallel(len(accounts), func(i int) {
		a := &accounts[i]
		for tool, to := range callers[a.Name] {
			a.Exports = append(a.Exports, Export{Kind: ServiceExport, Subject: tool, Accounts: sortedSet(to), Module: c.servedTool(tool).Module})
		}
		slices.SortFunc(a.Exports, func(x, y Export) int { return strings.Compare(x.Subject, y.Subject) })
		slices.SortFunc(a.Imports, func(x, y Import) int {
			if c := strings.Compare(x.Subject, y.Subject); c != 0 {
				return c
			}
			return strings.Compare(x.Account, y.Account)
		})
		a.Imports = slices.Compact(a.Imports)
	})
	p.Accounts = append([]Account{mesh}, accounts...)
}

func sortedSet(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
