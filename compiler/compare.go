package compiler

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// UserChange is what a change does to one bus user: added, removed, or its grants gained and
// lost. It compares what the users may do, not how the grants are written: a grant a wider one
// already covered is no gain, and one the new side still covers is no loss.
type UserChange struct {
	User string   `json:"user"`
	Kind UserKind `json:"kind"`
	// Added: the user is new; Removed: it is gone. Neither: its grants changed.
	Added   bool `json:"added,omitempty"`
	Removed bool `json:"removed,omitempty"`
	// Gained and Lost are per action: pub, sub, and responses (allow_responses).
	Gained []GrantChange `json:"gained"`
	Lost   []GrantChange `json:"lost"`
	// Credential is set when the user's recorded credential (hash, nkey or signing key) is not
	// the base's: a credential minted again, or one another user records.
	Credential *CredentialChange `json:"credential,omitempty"`
}

// CredentialChange is a user's recorded credential moving: what a reviewer must see, since
// whoever minted the new one can log in as the user, and the holder of the old one no longer can.
type CredentialChange struct {
	// Was and Now end the old and the new credential ("…" and its last characters), never the
	// whole of one; Was is "" for a user added.
	Was string `json:"was,omitempty"`
	Now string `json:"now"`
	// Of are the other users that record the same credential, in the head or in the base:
	// whoever holds theirs logs in as this user.
	Of []string `json:"of,omitempty"`
}

// Means says it in the catalogue's words.
func (c CredentialChange) Means(user string) string {
	if len(c.Of) > 0 {
		return fmt.Sprintf("takes the credential %s records: whoever holds it can log in as %s", strings.Join(c.Of, ", "), user)
	}
	if c.Was == "" {
		return fmt.Sprintf("is minted a credential (%s)", c.Now)
	}
	return fmt.Sprintf("is re-minted (%s → %s): whoever minted it can log in as %s, and the holder of the old one no longer can", c.Was, c.Now, user)
}

// fingerprint ends a credential: enough to tell two apart in a review, never the value.
func fingerprint(credential string) string {
	if len(credential) <= 8 {
		return credential
	}
	return "…" + credential[len(credential)-8:]
}

// GrantChange is one subject gained or lost, with the declarations that grant it (the new side's
// for a gain, the old side's for a loss) and, for a gain, why it widens the mesh.
type GrantChange struct {
	Action  string  `json:"action"`
	Subject string  `json:"subject"`
	Because []Grant `json:"because"`
	// Widening names what makes a gain worth a reviewer's second look: "a wildcard", "a new
	// person", "module catalog's subject".
	Widening []string `json:"widening,omitempty"`
}

// Widened reports whether the change lets a user do more in a way worth a reviewer's second
// look: an existing user gaining any grant, or a new user gaining one that reaches past its
// own things (a person, a wildcard, another module's subject). A machine or a module instance
// that only gets its own inbox, events and consumer is a user added, not a widening. The
// widening rule fires on exactly these and a review counts exactly these, so the two agree.
func (uc UserChange) Widened() bool {
	if len(uc.Gained) == 0 {
		return false
	}
	return !uc.Added || slices.ContainsFunc(uc.Gained, func(g GrantChange) bool { return len(g.Widening) > 0 })
}

// Means is what the change means in the catalogue's words: the grant that is the subject
// itself, else the first that covers it.
func (g GrantChange) Means() string {
	if len(g.Because) == 0 {
		return g.Action + " " + g.Subject
	}
	return g.Because[0].Means
}

// Responses is the action of allow_responses in a review: answering requests received.
const Responses = "responses"

// CompareUsers lists, in the head plan's user order then the base's removed users, every user a
// change from base to head adds, removes or changes the grants of.
func CompareUsers(base, head *Plan) []UserChange {
	// By name, once: a mesh of thousands of modules has tens of thousands of users.
	baseUsers, headUsers := usersByName(base), usersByName(head)
	// Who records each credential, on either side: one recorded for two users is a swap.
	holders := map[string][]string{}
	for _, p := range []*Plan{base, head} {
		for i := range p.Users {
			if c := p.Users[i].Credential(); c != "" && !slices.Contains(holders[c], p.Users[i].Name) {
				holders[c] = append(holders[c], p.Users[i].Name)
			}
		}
	}
	var out []UserChange
	for i := range head.Users {
		h := &head.Users[i]
		b := baseUsers[h.Name]
		uc := UserChange{User: h.Name, Kind: h.Kind, Added: b == nil}
		if b == nil {
			b = &User{Name: h.Name}
		}
		uc.Gained, uc.Lost = grantDelta(b, h, uc.Added)
		if now := h.Credential(); now != "" && now != b.Credential() {
			cc := &CredentialChange{Now: fingerprint(now)}
			if was := b.Credential(); was != "" {
				cc.Was = fingerprint(was)
			}
			for _, other := range holders[now] {
				if other != h.Name {
					cc.Of = append(cc.Of, other)
				}
			}
			if !uc.Added || len(cc.Of) > 0 {
				uc.Credential = cc
			}
		}
		if uc.Added || len(uc.Gained)+len(uc.Lost) > 0 || uc.Credential != nil {
			out = append(out, uc)
		}
	}
	for i := range base.Users {
		b := &base.Users[i]
		if headUsers[b.Name] != nil {
			continue
		}
		uc := UserChange{User: b.Name, Kind: b.Kind, Removed: true}
		_, uc.Lost = grantDelta(b, &User{Name: b.Name}, false)
		out = append(out, uc)
	}
	return out
}

func usersByName(p *Plan) map[string]*User {
	out := make(map[string]*User, len(p.Users))
	for i := range p.Users {
		if _, dup := out[p.Users[i].Name]; !dup {
			out[p.Users[i].Name] = &p.Users[i]
		}
	}
	return out
}

// grantDelta is what head may do that base may not, and the reverse.
func grantDelta(base, head *User, added bool) (gained, lost []GrantChange) {
	for _, a := range []Action{Publish, Subscribe} {
		// Asked of every subject either side allows: indexed for a user of many grants.
		bs, hs := base.Allowed(a), head.Allowed(a)
		inBase, inHead := coveredBy(bs), coveredBy(hs)
		headWhy, baseWhy := head.whyEach(a), base.whyEach(a)
		for _, s := range hs {
			if !inBase(s) {
				because := exactFirst(headWhy(s), s)
				gained = append(gained, GrantChange{Action: string(a), Subject: s, Because: because,
					Widening: widening(head, s, added, because)})
			}
		}
		for _, s := range bs {
			if !inHead(s) {
				lost = append(lost, GrantChange{Action: string(a), Subject: s, Because: exactFirst(baseWhy(s), s)})
			}
		}
	}
	// allow_responses is one flag on the server; what it is for is the tools answered.
	answers := func(gs []Grant) map[string]bool {
		out := make(map[string]bool, len(gs))
		for _, g := range gs {
			out[g.Subject] = true
		}
		return out
	}
	baseAnswers, headAnswers := answers(base.Grants.Responses), answers(head.Grants.Responses)
	for _, g := range head.Grants.Responses {
		if !baseAnswers[g.Subject] {
			gained = append(gained, GrantChange{Action: Responses, Subject: g.Subject, Because: []Grant{g}})
		}
	}
	for _, g := range base.Grants.Responses {
		if !headAnswers[g.Subject] {
			lost = append(lost, GrantChange{Action: Responses, Subject: g.Subject, Because: []Grant{g}})
		}
	}
	return gained, lost
}

// Allowed is what the user may do with an action, as subjects: the permission's allow list
// ("deny >" allows nothing).
func (u *User) Allowed(a Action) []string {
	if a == Subscribe {
		return u.Subscribe.Allow
	}
	return u.Publish.Allow
}

// exactFirst puts the grants that are the subject itself before those that cover it.
func exactFirst(gs []Grant, subject string) []Grant {
	slices.SortStableFunc(gs, func(a, b Grant) int {
		return cmp.Compare(boolInt(a.Subject != subject), boolInt(b.Subject != subject))
	})
	return gs
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// widening says what makes a gained subject reach further than the user's own things: a
// wildcard across names, a new person, a subject in another module's namespace. A user's own
// inbox and the ack subjects of one consumer are wildcards over that user's own replies, not
// across the mesh, and are not called out.
func widening(u *User, subject string, added bool, because []Grant) []string {
	var out []string
	// Its own inbox and acks; and a serving user's answers with an account per principal: the
	// server's replies to the calls that crossed into its module's account, what allow_responses
	// is in one account.
	own := subject == Inbox(u.Name) || strings.HasPrefix(subject, "$JS.ACK.") || subject == ServiceReplies
	if added && u.Kind == KindPerson && !own {
		out = append(out, "a new person")
	}
	if !own && slices.ContainsFunc(strings.Split(subject, "."), func(t string) bool { return t == "*" || t == ">" }) {
		out = append(out, "a wildcard")
	}
	// The grant that is the subject itself says whose it is (exactFirst put it first).
	if len(because) > 0 && because[0].Subject == subject {
		if m := because[0].Module; m != "" && m != "*" && m != u.Module {
			out = append(out, fmt.Sprintf("module %s's subject", m))
		}
	}
	return out
}

// AccountChange is what a change does to one account of an isolated mesh: added, removed, or
// the exports and imports it gains and loses. Each is one line a reviewer reads: an import names
// the account it comes from, an export each account it goes to, so one new caller of a tool is
// one line, not a rewritten list.
type AccountChange struct {
	Account string   `json:"account"`
	Added   bool     `json:"added,omitempty"`
	Removed bool     `json:"removed,omitempty"`
	Gained  []string `json:"gained"`
	Lost    []string `json:"lost"`
}

// CompareAccounts lists every account a change from base to head adds, removes or changes the
// exports or imports of, head's order first, then base's removed accounts. A mesh in one account
// has none; a mesh switching isolation gains or loses all of them, which is what the switch does.
//
// In operator mode every account is shown, the mesh's one account too, with its key and each
// user's signing key: a user minted again or revoked is a signing key gained or lost, and what
// apply pushes is exactly the accounts listed.
func CompareAccounts(base, head *Plan) []AccountChange {
	baseAccounts := map[string]*Account{}
	baseList := base.comparedAccounts()
	for i := range baseList {
		baseAccounts[baseList[i].Name] = &baseList[i]
	}
	headNames := map[string]bool{}
	var out []AccountChange
	baseKeys, headKeys := base.signingKeys(), head.signingKeys()
	for _, h := range head.comparedAccounts() {
		headNames[h.Name] = true
		b := baseAccounts[h.Name]
		ac := AccountChange{Account: h.Name, Added: b == nil}
		if b == nil {
			b = &Account{}
		}
		ac.Gained, ac.Lost = lineDelta(base.accountLines(b, baseKeys), head.accountLines(&h, headKeys))
		if ac.Added || len(ac.Gained)+len(ac.Lost) > 0 {
			out = append(out, ac)
		}
	}
	for i := range baseList {
		b := &baseList[i]
		if !headNames[b.Name] {
			_, lost := lineDelta(base.accountLines(b, baseKeys), nil)
			out = append(out, AccountChange{Account: b.Name, Removed: true, Lost: lost})
		}
	}
	return out
}

// comparedAccounts are the accounts a review compares: in operator mode every account pushed, as
// its JWT says it (a module's tools one wildcard, the tool hubs among them), else the isolated
// mesh's accounts (none for one shared account, which the file holds alone).
func (p *Plan) comparedAccounts() []Account {
	if p.Operator != nil {
		return p.jwtAccounts(p.usersByName())
	}
	return p.Accounts
}

// signingKeys are the users' recorded signing keys, by name.
func (p *Plan) signingKeys() map[string]string {
	out := map[string]string{}
	for _, u := range p.Users {
		if u.SigningKey != "" {
			out[u.Name] = u.SigningKey
		}
	}
	return out
}

// accountLines is an account's exports, imports and users, one line each, sorted; in operator
// mode, its key and its users' signing keys too.
func (p *Plan) accountLines(a *Account, signing map[string]string) []string {
	var out []string
	for _, u := range a.Users {
		out = append(out, "user "+u)
		if key := signing[u]; p.Operator != nil && key != "" {
			out = append(out, fmt.Sprintf("signing key of %s %s", u, key))
		}
	}
	if k := p.Operator; k != nil && a.Name != "" && k.Accounts[a.Name] != "" {
		out = append(out, "key "+k.Accounts[a.Name])
	}
	if a.JetStream {
		out = append(out, "jetstream enabled")
	}
	for _, e := range a.Exports {
		answered := ""
		if e.ResponseStream {
			answered = " (answered by a stream)"
		}
		for _, to := range e.Accounts {
			out = append(out, fmt.Sprintf("export %s %s to %s%s", e.Kind, e.Subject, to, answered))
		}
	}
	for _, im := range a.Imports {
		out = append(out, fmt.Sprintf("import %s %s from %s", im.Kind, im.Subject, im.Account))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// lineDelta is what head has that base has not (gained) and the reverse (lost), both sorted.
func lineDelta(base, head []string) (gained, lost []string) {
	gained, lost = []string{}, []string{}
	for _, l := range head {
		if _, ok := slices.BinarySearch(base, l); !ok {
			gained = append(gained, l)
		}
	}
	for _, l := range base {
		if _, ok := slices.BinarySearch(head, l); !ok {
			lost = append(lost, l)
		}
	}
	return gained, lost
}

// ReadChange is one consumer reading more or less after a change: who reads (the module, or
// mesh-controller), through which consumer, and each `consumes` (or `follows`) entry gained or
// lost, with its manifest line — what "photos may now read registry's image.pushed" is made of.
type ReadChange struct {
	// Reader is the module the consumer reads for, or mesh-controller.
	Reader   string `json:"reader"`
	User     string `json:"user"`
	Consumer string `json:"consumer"`
	Added    bool   `json:"added,omitempty"`
	Removed  bool   `json:"removed,omitempty"`
	// Gained and Lost are the entries behind the filters: a gain's from the head, a loss's from
	// the base. An entry whose subjects the other side already reads is no change.
	Gained []Grant `json:"gained"`
	Lost   []Grant `json:"lost"`
}

// CompareReads lists, in the head plan's consumer order then the base's removed consumers,
// every consumer of a module or the controller whose reads a change from base to head changes.
func CompareReads(base, head *Plan) []ReadChange {
	key := func(c *Consumer) string { return c.Stream + "/" + ConsumerName(c.Config) }
	baseConsumers := map[string]*Consumer{}
	for i := range base.Consumers {
		baseConsumers[key(&base.Consumers[i])] = &base.Consumers[i]
	}
	headUsers, baseUsers := usersByName(head), usersByName(base)
	reader := func(users map[string]*User, c *Consumer) string {
		if u := users[c.User]; u != nil && u.Module != "" {
			return u.Module
		}
		return c.User
	}
	delta := func(from, to []Grant) []Grant {
		subjects := make([]string, len(from))
		for i, x := range from {
			subjects[i] = x.Subject
		}
		covered := coveredBy(subjects) // indexed for a consumer of many reads
		out := []Grant{}
		for _, g := range to {
			if !covered(g.Subject) {
				out = append(out, g)
			}
		}
		return out
	}
	var out []ReadChange
	seen := map[string]bool{}
	for i := range head.Consumers {
		h := &head.Consumers[i]
		if len(h.Reads) == 0 {
			continue
		}
		k := key(h)
		seen[k] = true
		b := baseConsumers[k]
		rc := ReadChange{Reader: reader(headUsers, h), User: h.User, Consumer: k, Added: b == nil}
		var before []Grant
		if b != nil {
			before = b.Reads
		}
		rc.Gained, rc.Lost = delta(before, h.Reads), delta(h.Reads, before)
		if len(rc.Gained)+len(rc.Lost) > 0 {
			out = append(out, rc)
		}
	}
	for i := range base.Consumers {
		b := &base.Consumers[i]
		if k := key(b); len(b.Reads) > 0 && !seen[k] {
			out = append(out, ReadChange{Reader: reader(baseUsers, b), User: b.User, Consumer: k, Removed: true,
				Gained: []Grant{}, Lost: slices.Clone(b.Reads)})
		}
	}
	return out
}

// KeyChange is one of keys.yaml's keys moving between two plans of an operator-mode mesh.
type KeyChange struct {
	// What is the key: "operator", "signing key", "system account", "probe key", or
	// "account NAME".
	What string `json:"what"`
	// Account is the account whose key it is, "" for the four keys of the operator's side.
	Account string `json:"account,omitempty"`
	Was     string `json:"was"`
	Now     string `json:"now"`
	// Means is what it does to a bus running the base.
	Means string `json:"means"`
}

// CompareKeys lists the operator-mode keys a change moves: the operator's, its signing key, the
// system account's, the probe key, and each account's key recorded in both (an account added or
// removed is the accounts' review).
func CompareKeys(base, head *Plan) []KeyChange {
	b, h := base.Operator, head.Operator
	if b == nil || h == nil {
		return nil
	}
	var out []KeyChange
	// account is "" for the operator's side's keys.
	add := func(what, account, was, now, means string) {
		if was != now {
			out = append(out, KeyChange{What: what, Account: account, Was: was, Now: now, Means: means})
		}
	}
	add("operator", "", b.Operator, h.Operator, "the servers trust the operator their configuration names: each must be given the new operator's (meshc operator init writes it), or every account apply pushes is refused")
	add("signing key", "", b.SigningKey, h.SigningKey, "every account is signed with it: the servers must trust it (the operator's JWT lists it), and CI's MESHC_OPERATOR_SIGNING_KEY must be its seed")
	add("system account", "", b.SystemAccount, h.SystemAccount, "the servers' system account, whose user pushes the accounts: their configuration and CI's MESHC_SYSTEM_CREDS must name the new one")
	add("probe key", "", b.ProbeKey, h.ProbeKey, "apply proves each account it pushes by a user this key signs: every account is pushed again with the new one")
	for _, name := range sortedKeys(h.Accounts) {
		was, ok := b.Accounts[name]
		if !ok || was == "" || h.Accounts[name] == "" {
			continue
		}
		means := "an account's key is its identity: the account under the old key is removed and one under the new key made, and every user of it needs credentials minted again"
		if name == head.Account {
			means = "the mesh's account holds every stream under its key: apply refuses to move it (put the old key back, or move the streams first)"
		}
		add("account "+name, name, was, h.Accounts[name], means)
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
