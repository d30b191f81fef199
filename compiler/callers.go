package compiler

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ServedTool is a tool some running module serves and the accounts whose calls may reach it: the
// facts a tool server checks a caller against (docs/nats.md, "Who called a tool").
type ServedTool struct {
	// Subject is the tool's subject, Module the module serving it, in queue group Queue.
	Subject string `json:"subject"`
	Module  string `json:"module"`
	Queue   string `json:"queue"`
	// Account is where the tool is served: its module's account with an account per principal,
	// holding the module's serving users alone; the mesh's otherwise.
	Account string `json:"account"`
	// Callers are the accounts whose users may call it, sorted: with an account per principal
	// each calling module instance's and person's (the serving module's own instances when it
	// calls itself); in one account, that account.
	Callers []string `json:"callers"`
	// Hubs are, in operator mode, the tool hubs a call may reach it through (docs/nats.md,
	// "Operator mode at scale"): a person who may call every tool calls through a hub. A hub has
	// no users, so nothing can enter it but a call the server stamped at its first hop, and a
	// call's caller is believed when the hub is the one hop it crossed after that.
	Hubs []string `json:"hubs,omitempty"`
	// Keys name, in operator mode, the accounts above by their public keys, which is how the
	// server names them in Nats-Request-Info there.
	Keys map[string]string `json:"keys,omitempty"`
}

// RequestInfoHeader is the header the server adds to a message crossing into another account
// through a service import, naming the account it came from (`acc`) and, when it had crossed an
// import before, the account it came through last (`svc`).
const RequestInfoHeader = "Nats-Request-Info"

// Caller says which account a call to the tool came from, given the call's reply subject and its
// Nats-Request-Info header, or why the call proves no caller. The server vouches for the header's
// `acc` on one hop only: a call that crossed a second import (an answer, carrying a reply, that
// landed on a subject its requester's account imports) keeps whatever `acc` the message already
// carried, and the server then sets `svc`. So:
//
//   - a call whose reply is the server's `_R_.…` crossed an import into the tool's account: its
//     caller is the header's `acc`, and only when `svc` is empty; a client cannot give an `_R_`
//     reply itself;
//   - or when `svc` is one of the tool's Hubs (operator mode): the call crossed two imports, the
//     first into a hub, where no user can publish, so its `acc` was stamped at that first hop;
//   - a call with any other reply was made inside the tool's account, where no import stamped
//     it: in one account its caller is that account, whoever made it and whatever header it
//     carries; with an account per principal the tool's account holds its module's serving users
//     alone, who call nothing, so such a call is refused;
//   - a call with no reply is refused: nothing tells it from one made inside the account with a
//     header of its own.
//
// The caller must be one of the tool's callers. In operator mode the server names accounts by
// their keys, which Keys turns back into names.
func (t ServedTool) Caller(reply, requestInfo string) (string, error) {
	var account string
	switch {
	case reply == "":
		return "", fmt.Errorf("a call to %s with no reply proves no caller: answer only calls with a reply", t.Subject)
	case !strings.HasPrefix(reply, ServiceRepliesPrefix):
		if !slices.Contains(t.Callers, t.Account) {
			return "", fmt.Errorf("a call to %s with a reply of its own was made inside %s, where no user calls it: refuse it (every caller's call crosses an import and carries the server's reply)", t.Subject, t.Account)
		}
		account = t.Account
	case requestInfo == "":
		return "", fmt.Errorf("a call to %s came through an import without a %s header: refuse it (the server stamps every call it carries across accounts)", t.Subject, RequestInfoHeader)
	default:
		var info struct {
			Account string `json:"acc"`
			Service string `json:"svc"`
		}
		if err := json.Unmarshal([]byte(requestInfo), &info); err != nil {
			return "", fmt.Errorf("a call to %s carries a %s header that is not the server's: %v", t.Subject, RequestInfoHeader, err)
		}
		for _, name := range []*string{&info.Account, &info.Service} {
			if known, ok := t.Keys[*name]; ok {
				*name = known
			}
		}
		if info.Service != "" && !slices.Contains(t.Hubs, info.Service) {
			return "", fmt.Errorf("a call to %s claims to come from %s but crossed more than one import, last through %s: the server does not vouch for a caller named before the last hop; refuse it", t.Subject, info.Account, info.Service)
		}
		account = info.Account
	}
	if !slices.Contains(t.Callers, account) {
		return "", fmt.Errorf("account %s may not call %s (its callers: %s): refuse it; to allow it, add the tool to the caller's calls: (a module) or may-call: (a person)", account, t.Subject, strings.Join(t.Callers, ", "))
	}
	return account, nil
}

// ServedTool returns the served tool of a subject, or nil.
func (p *Plan) ServedTool(subject string) *ServedTool {
	i, ok := slices.BinarySearchFunc(p.Tools, subject, func(t ServedTool, s string) int { return strings.Compare(t.Subject, s) })
	if !ok {
		return nil
	}
	return &p.Tools[i]
}

// serveTools derives, from the catalogue, every tool a running module serves: each tool of each
// module a machine runs, served in its module's queue group from its module's account (the mesh's,
// in one account), sorted by subject. Every pass that needs who serves what reads this list; the
// callers are added once every user has its account (toolCallers).
func (c *compilation) serveTools() {
	p := c.plan
	p.Tools = []ServedTool{}
	c.toolAt = map[string]int{}
	inv := c.ix.Catalogue.Inventory
	if inv == nil {
		return
	}
	perModule := c.ix.Catalogue.Mesh.PerModule()
	running := map[string]bool{}
	for _, n := range inv.Nodes {
		for _, r := range n.Runs {
			m := c.ix.Modules[r.Value]
			if m == nil || running[m.Name.Value] {
				continue
			}
			running[m.Name.Value] = true
			name := m.Name.Value
			account := p.Account
			if perModule {
				account = ModuleAccount(name)
			}
			for _, t := range m.Tools {
				subject := Tool(name, t.Value)
				if _, dup := c.toolAt[subject]; dup {
					continue
				}
				c.toolAt[subject] = len(p.Tools)
				p.Tools = append(p.Tools, ServedTool{Subject: subject, Module: name, Queue: ToolQueue(name), Account: account})
			}
		}
	}
	slices.SortFunc(p.Tools, func(x, y ServedTool) int { return strings.Compare(x.Subject, y.Subject) })
	for i, t := range p.Tools {
		c.toolAt[t.Subject] = i
	}
}

// servedTool is the served tool of a subject a user calls, or nil when no running module serves
// it (a call nothing answers, which imports nothing).
func (c *compilation) servedTool(subject string) *ServedTool {
	if i, ok := c.toolAt[subject]; ok {
		return &c.plan.Tools[i]
	}
	return nil
}

// called are the served tools a user's declarations call: each it names, and every one for a
// person who may call every tool.
func (c *compilation) called(u *User) []*ServedTool {
	if u.callsEvery {
		out := make([]*ServedTool, len(c.plan.Tools))
		for i := range c.plan.Tools {
			out[i] = &c.plan.Tools[i]
		}
		return out
	}
	var out []*ServedTool
	for _, s := range u.calls {
		if t := c.servedTool(s); t != nil {
			out = append(out, t)
		}
	}
	return out
}

// toolCallers records on each served tool the accounts whose users may call it (after isolate):
// what a tool server checks a caller against.
func (c *compilation) toolCallers() {
	p := c.plan
	for i := range p.Users {
		u := &p.Users[i]
		for _, t := range c.called(u) {
			t.Callers = append(t.Callers, u.Account)
		}
	}
	for i := range p.Tools {
		t := &p.Tools[i]
		t.Callers = sortedSet(t.Callers)
		if t.Callers == nil {
			t.Callers = []string{}
		}
	}
}
