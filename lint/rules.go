// Package lint checks a loaded catalogue as a whole: names, agreement between emitters and
// consumers on derived subjects, the seat rules, and — through the compiler — the checks that
// need a compiled plan. It imports catalogue and compiler, and nothing imports it but cmd/meshc.
package lint

import (
	"slices"

	"meshc/catalogue"
)

// Rule is one check, as data: the table drives `meshc lint --list`, the README's rule table and
// the SARIF rule metadata, so they cannot drift apart.
type Rule struct {
	// ID is stable: pre-commit configurations and code-scanning history refer to it.
	ID       string
	Severity catalogue.Severity
	// Summary says what the rule catches, in a line.
	Summary string
	// Why is the failure the rule prevents: the reason survives the next person who wants to
	// delete the rule.
	Why string
}

const (
	error_  = catalogue.Error
	warning = catalogue.Warning
	info    = catalogue.Info
)

// Rules is every rule meshc has, in the order the README lists them.
var Rules = []Rule{
	{catalogue.RuleYAML, error_,
		"unreadable YAML, unknown keys, wrong types",
		"A misspelt key is otherwise a field silently left empty: a module that consumes nothing because it wrote `consume:`."},
	{"name", error_,
		"a name outside its grammar, or a module or seat taking a reserved mesh-*/node-* name",
		"Names become subject tokens and usernames; a dot, a wildcard or a space in one changes which subjects a permission covers."},
	{"module-duplicate", error_,
		"two manifests for one module",
		"Only one of them would be compiled, and which depends on file order."},
	{"event-local", error_,
		"an event named the old routing-key way, prefixed with its own module, holding a wildcard, or written as a subject",
		"Events are local names and the mesh derives the subject; 37 manifests once spelt them as routing keys and no cross-module subscription matched anything."},
	{"no-subject", error_,
		"a field holding a subject (mesh.…, $JS.…, _INBOX.…, _DELIVER.…)",
		"A manifest that holds a subject stops being true the day the subject space is reorganised."},
	{"consume-agreement", error_,
		"a consumed name whose derived subject no emitter publishes",
		"A subscription to a subject nothing publishes is not an error anywhere: it is silence. Comparing names let a role's event derived into a module's namespace through."},
	{"call-agreement", error_,
		"a called or person-granted tool that nobody serves",
		"A call to a tool nobody serves waits out its whole timeout before failing, on every call."},
	{"seat-reserved", error_,
		"a module declaring a mesh-* or node-* seat",
		"The prefix is the reservation: a module taking a mesh role's name would receive the mesh's own work."},
	{"seat-duplicate", error_,
		"two declarers of one seat",
		"Two declarations of one seat disagree about what it accepts and emits, and only one is compiled."},
	{"seat-unknown", error_,
		"a claim or use of a seat nobody declares",
		"Work submitted to a seat nobody declares has no stream to wait in and is lost."},
	{"seat-renamed", warning,
		"a claim, use or consumed event written with a seat's old name",
		"The old name still resolves through the alias, but a manifest written against it breaks when the alias is retired."},
	{"seat-holder-delivers", error_,
		"a holder that does not provide what its seat delivers",
		"Whoever requires the seat's interface would be served by a module that does not speak it."},
	{"seat-contended", error_,
		"two holders of a mesh-scoped seat, or of a node-scoped one on one machine",
		"Two holders of one seat split its work between them, each believing it is the only one."},
	{"seat-interface-name", warning,
		"a seat named like the interface it delivers, unless listed in shared-names",
		"A blanket rename once renamed a seat and the interface together, and the failure read \"served on <nil>\"."},
	{"name-clash", error_,
		"a seat and a module with one name",
		"A consumed name's first token is resolved as a seat or a module; sharing a name makes the subject depend on which."},
	{"bus-users-claim", error_,
		"a module asking for the bus-users file without a claim on mesh-broker",
		"That file holds every user's password hash: asking for it must not be enough to receive it."},
	{"seat-use-nothing", error_,
		"a use of a seat that accepts no work",
		"Using a seat means submitting work to it; a seat that accepts none has no work queue, so the use grants nothing."},
	{"inventory-unknown", error_,
		"a machine running a module that is not in the catalogue",
		"A module with no manifest has no declared authority: it would be composed with an empty permission list."},
	{"requires-unmet", warning,
		"a running module requiring an interface no running module provides",
		"The module starts, and fails at its first use of the interface, far from the cause."},
	{"seat-unheld", info,
		"a running module submitting work to a seat nobody running holds",
		"Work waits in the seat's queue until a holder appears; worth knowing, not wrong."},
	{"alias-dangling", warning,
		"an alias to a seat nobody declares",
		"A rename that leads nowhere turns every old name into a seat-unknown at the next lint."},
	{"event-unheard", info,
		"an emitted event nobody consumes",
		"Not wrong — a module may be installed before its listeners — but often a consumer that names the event differently."},
	{"stream-overlap", error_,
		"two streams whose subjects overlap",
		"The server refuses the second stream at apply; said here, naming both, before anything touches a bus."},
	{"user-duplicate", error_,
		"two bus users with one name",
		"The server refuses a duplicate user; which of two sources wins must never depend on the order a file was read."},
	{"credential-missing", warning,
		"a bus user with no recorded hash in credentials.yaml",
		"A user with no hash cannot connect; named so it is minted, never dropped in silence or written as a user anybody is."},
	{RuleReplay, error_,
		"with --against: a consumer whose name changes (a module or machine renamed, a module moved to another machine)",
		"A new name is a new consumer: it starts at the beginning of its stream and delivers the history again, and the old one's position is lost."},
	{RuleRetention, error_,
		"with --against: a stream's max-age, max-bytes, max-msgs, max-msgs-per-subject or replicas lowered, or a change that replaces a stream",
		"The server drops what a stream holds beyond a lowered limit the moment the change is applied, and a replace deletes everything; nothing on the bus asks first."},
	{RuleWidening, warning,
		"with --against: a bus user gaining a grant (a new wildcard, a new person, another module's subject called out)",
		"A new grant reaches the bus as one more line of accounts.conf; said here, a reviewer sees who may now do what without reading the golden diff."},
	{RuleContract, error_,
		"with --against: an event, tool, seat or kind of work the base offered that is gone, or a seat renamed without an alias",
		"Whoever still consumes, calls or submits it meets silence, and work queued for a seat waits with nobody to take it."},
	{"credential-invalid", error_,
		"a credentials.yaml value that is not a bcrypt hash",
		"credentials.yaml keeps hashes only; a plaintext password there is a secret committed to git, and the server would accept it as the password itself."},
}

// Lookup returns the rule with the given id.
func Lookup(id string) (Rule, bool) {
	i := slices.IndexFunc(Rules, func(r Rule) bool { return r.ID == id })
	if i < 0 {
		return Rule{}, false
	}
	return Rules[i], true
}
