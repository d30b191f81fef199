package lint

import (
	"fmt"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
)

var ruleForgeableEvents = &catalogue.Rule{ID: "forgeable-events", Severity: catalogue.Info,
	Summary: "a mesh in one account (isolation: shared-account) whose people may call a tool some running module serves",
	Why: "In one account whoever makes a request chooses where the answer goes, and the server delivers it there unchecked: " +
		"a person's tool call with its reply on an event subject is stored in EVENTS as that module's event, and every consumer takes it as real. " +
		"With an account per module (isolation: account-per-module) the reply crosses an import and is rewritten, and the forgery reaches nothing."}

// checkIsolation says, once, when the mesh runs in one account and a person may call a tool a
// running module serves: the mode in which people can forge events (docs/nats.md, "A requester
// chooses where the answer goes").
func (l *linter) checkIsolation() {
	c := l.ix.Catalogue
	if c.Mesh.PerModule() || c.Inventory == nil {
		return
	}
	served := map[string]bool{} // MODULE.TOOL of every tool a running module serves
	first := ""
	for _, m := range c.Modules {
		if !l.canonical(m) || !l.running(m.Name.Value) {
			continue
		}
		for _, t := range m.Tools {
			name := m.Name.Value + "." + t.Value
			served[name] = true
			if first == "" || name < first {
				first = name
			}
		}
	}
	if len(served) == 0 {
		return
	}
	callers, person, tool := 0, "", ""
	for _, p := range c.Inventory.People {
		for _, t := range p.MayCall {
			if t.Value != compiler.EveryTool && !served[t.Value] {
				continue
			}
			callers++
			if person == "" {
				person, tool = p.Name.Value, t.Value
				if tool == compiler.EveryTool {
					tool = first
				}
			}
			break
		}
	}
	if callers == 0 {
		return
	}
	at := c.Mesh.Isolation.Pos
	if at.File == "" {
		at = catalogue.Pos{File: c.Mesh.File}
	}
	switch callers {
	case 1:
	case 2:
		person += " (and 1 other person)"
	default:
		person += fmt.Sprintf(" (and %d other people)", callers-1)
	}
	l.report(ruleForgeableEvents, at,
		"every bus user shares the mesh's one account, where a caller chooses where an answer goes: %s may call %s, and a call with its reply on a module's event subject has the tool's answer stored in EVENTS as that module's event; "+
			"set `isolation: account-per-module` in mesh.yaml to block it (docs/nats.md, \"A requester chooses where the answer goes\")",
		person, tool)
}
