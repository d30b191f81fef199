// Package lint checks a loaded catalogue as a whole and reports what it finds. It holds the rule
// table (Rules: every rule meshc has, the loader's and the compiler's among them, each declared
// beside the check that reports it, with its example under examples/), the checks of names,
// agreement between emitters and consumers on derived subjects, seats, the inventory, isolation
// and credentials, and the breaking-change rules of --against (Breaks), which ask change what a
// change replaces. It writes findings as text, JSON, SARIF or GitHub workflow commands, and a
// rule as `meshc explain` and docs/rules.md show it. cmd/meshc runs it; review reads its breaks.
package lint

import (
	"slices"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
)

// Rule is one check, as a value: catalogue.Rule, declared beside the code that reports it.
type Rule = catalogue.Rule

// Rules is every rule meshc has, in the order the README lists them: the loader's, lint's own
// and the compiler's. The table drives `meshc lint --list`, the README's rule table and the
// SARIF rule metadata, so they cannot drift apart.
var Rules = []*Rule{
	catalogue.RuleYAML,
	ruleName,
	ruleModuleDuplicate,
	ruleEventLocal,
	ruleNoSubject,
	ruleConsumeAgreement,
	ruleCallAgreement,
	ruleSeatReserved,
	ruleSeatDuplicate,
	ruleSeatUnknown,
	ruleSeatRenamed,
	ruleSeatHolderDelivers,
	ruleSeatContended,
	ruleSeatInterfaceName,
	ruleNameClash,
	ruleBusUsersClaim,
	ruleSeatUseNothing,
	ruleInventoryUnknown,
	ruleRequiresUnmet,
	ruleSeatUnheld,
	ruleAliasDangling,
	ruleEventUnheard,
	ruleForgeableEvents,
	compiler.RuleStreamOverlap,
	compiler.RuleUserDuplicate,
	compiler.RuleCredentialMissing,
	compiler.RuleStreamCapacity,
	compiler.RuleConsumerCapacity,
	compiler.RuleLimitTooLow,
	compiler.RuleJWTTooLarge,
	ruleReplay,
	ruleRetention,
	ruleWidening,
	ruleCredential,
	ruleContract,
	ruleApprovalUnmatched,
	ruleCredentialInvalid,
	ruleCredentialDuplicate,
	ruleIgnore,
}

// Lookup returns the rule with the given id, or nil.
func Lookup(id string) *Rule {
	i := slices.IndexFunc(Rules, func(r *Rule) bool { return r.ID == id })
	if i < 0 {
		return nil
	}
	return Rules[i]
}
