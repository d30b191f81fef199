package lint

import (
	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
)

// The examples of every rule: a catalogue that fires it and the same catalogue fixed, each a
// txtar archive. `meshc explain RULE` and docs/rules.md print them, and TestExamplesAreHonest
// lints each: Before must fire the rule, After must not. They are assigned here, in one place,
// rather than in each rule's declaration, so the rules stay one glance long.
func init() {
	for r, e := range examples {
		r.Example = e
	}
}

const exampleHash = `"$2a$04$GVqXgr54yUjjKk8puUK3yObfVms9mVjoYReukW.abay8w0u8n.v0W"`

// otherHash and thirdHash are two more, for examples with users that must not share one.
const (
	otherHash = `"$2a$04$pPCKYpFoTAVvYxRGIt28LelV/SH/COOUaSdtkyQbfODvNdoINn/.O"`
	thirdHash = `"$2a$04$V1QK4GuJxPdUp1BDUdKx2O3MWtQ9WqpZ7nwFuKE04jvQpYwDJ8k0a"`
)

var examples = map[*Rule]catalogue.Example{
	catalogue.RuleYAML: {
		Before: `-- mesh.yaml --
name: novox
-- modules/builder.yaml --
module: builder
consume: [catalog.upgraded]    # not a key: builder would consume nothing
-- modules/catalog.yaml --
module: catalog
emits: [upgraded]
`,
		After: `-- mesh.yaml --
name: novox
-- modules/builder.yaml --
module: builder
consumes: [catalog.upgraded]
-- modules/catalog.yaml --
module: catalog
emits: [upgraded]
`},
	ruleName: {
		Before: `-- mesh.yaml --
name: novox
-- modules/builder.yaml --
module: Builder
`,
		After: `-- mesh.yaml --
name: novox
-- modules/builder.yaml --
module: builder
`},
	ruleModuleDuplicate: {
		Before: `-- mesh.yaml --
name: novox
-- modules/builder.yaml --
module: builder
-- modules/old/builder.yaml --
module: builder
`,
		After: `-- mesh.yaml --
name: novox
-- modules/builder.yaml --
module: builder
`},
	ruleEventLocal: {
		Before: `-- mesh.yaml --
name: novox
-- modules/builder.yaml --
module: builder
emits: [builder.built]   # derived as mesh.mod.builder.event.builder.built
`,
		After: `-- mesh.yaml --
name: novox
-- modules/builder.yaml --
module: builder
emits: [built]           # derived as mesh.mod.builder.event.built
`},
	ruleNoSubject: {
		Before: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
emits: [upgraded]
-- modules/builder.yaml --
module: builder
consumes: [mesh.mod.catalog.event.upgraded]
`,
		After: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
emits: [upgraded]
-- modules/builder.yaml --
module: builder
consumes: [catalog.upgraded]
`},
	ruleConsumeAgreement: {
		Before: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
emits: [upgraded]
-- modules/builder.yaml --
module: builder
consumes: [catalog.upgrade]
`,
		After: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
emits: [upgraded]
-- modules/builder.yaml --
module: builder
consumes: [catalog.upgraded]
`},
	ruleCallAgreement: {
		Before: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
-- modules/builder.yaml --
module: builder
calls: [catalog.lookup]
`,
		After: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
tools: [lookup]
-- modules/builder.yaml --
module: builder
calls: [catalog.lookup]
`},
	ruleSeatReserved: {
		Before: `-- mesh.yaml --
name: novox
-- modules/registry.yaml --
module: registry
seats: [{name: mesh-image-store, scope: mesh}]
claims: [mesh-image-store]
`,
		After: `-- mesh.yaml --
name: novox
-- modules/registry.yaml --
module: registry
seats: [{name: image-store, scope: mesh}]
claims: [image-store]
`},
	ruleSeatDuplicate: {
		Before: `-- mesh.yaml --
name: novox
-- modules/registry.yaml --
module: registry
seats: [{name: image-store, scope: mesh}]
-- modules/mirror.yaml --
module: mirror
seats: [{name: image-store, scope: mesh}]
`,
		After: `-- mesh.yaml --
name: novox
-- modules/registry.yaml --
module: registry
seats: [{name: image-store, scope: mesh}]
-- modules/mirror.yaml --
module: mirror
claims: [image-store]
`},
	ruleSeatUnknown: {
		Before: `-- mesh.yaml --
name: novox
-- modules/registry.yaml --
module: registry
claims: [image-store]
`,
		After: `-- mesh.yaml --
name: novox
-- modules/registry.yaml --
module: registry
seats: [{name: image-store, scope: mesh}]
claims: [image-store]
`},
	ruleSeatRenamed: {
		Before: `-- mesh.yaml --
name: novox
roles: [{name: git, scope: mesh}]
aliases: {git-server: git}
-- modules/forgejo.yaml --
module: forgejo
claims: [git-server]
`,
		After: `-- mesh.yaml --
name: novox
roles: [{name: git, scope: mesh}]
aliases: {git-server: git}
-- modules/forgejo.yaml --
module: forgejo
claims: [git]
`},
	ruleSeatHolderDelivers: {
		Before: `-- mesh.yaml --
name: novox
roles: [{name: mesh-broker, scope: mesh, delivers: mesh-bus}]
-- modules/nats.yaml --
module: nats
claims: [mesh-broker]
`,
		After: `-- mesh.yaml --
name: novox
roles: [{name: mesh-broker, scope: mesh, delivers: mesh-bus}]
-- modules/nats.yaml --
module: nats
provides: [mesh-bus]
claims: [mesh-broker]
`},
	ruleSeatContended: {
		Before: `-- mesh.yaml --
name: novox
roles: [{name: mesh-build-machine, scope: mesh, accepts: [build]}]
-- modules/builder.yaml --
module: builder
claims: [mesh-build-machine]
-- inventory.yaml --
nodes:
  - {name: anchor, runs: [builder]}
  - {name: forge, runs: [builder]}
`,
		After: `-- mesh.yaml --
name: novox
roles: [{name: mesh-build-machine, scope: mesh, accepts: [build]}]
-- modules/builder.yaml --
module: builder
claims: [mesh-build-machine]
-- inventory.yaml --
nodes:
  - {name: anchor, runs: []}
  - {name: forge, runs: [builder]}
`},
	ruleSeatInterfaceName: {
		Before: `-- mesh.yaml --
name: novox
roles: [{name: registry, scope: mesh, delivers: registry}]
-- modules/forgejo.yaml --
module: forgejo
`,
		After: `-- mesh.yaml --
name: novox
roles: [{name: image-store, scope: mesh, delivers: registry}]
-- modules/forgejo.yaml --
module: forgejo
`},
	ruleNameClash: {
		Before: `-- mesh.yaml --
name: novox
roles: [{name: photos, scope: mesh}]
-- modules/photos.yaml --
module: photos
`,
		After: `-- mesh.yaml --
name: novox
roles: [{name: photo-library, scope: mesh}]
-- modules/photos.yaml --
module: photos
`},
	ruleBusUsersClaim: {
		Before: `-- mesh.yaml --
name: novox
roles: [{name: mesh-broker, scope: mesh}]
-- modules/nats.yaml --
module: nats
files: {bus-users: /etc/nats-server/accounts.conf}
`,
		After: `-- mesh.yaml --
name: novox
roles: [{name: mesh-broker, scope: mesh}]
-- modules/nats.yaml --
module: nats
claims: [mesh-broker]
files: {bus-users: /etc/nats-server/accounts.conf}
`},
	ruleSeatUseNothing: {
		Before: `-- mesh.yaml --
name: novox
roles: [{name: mesh-archive, scope: mesh}]
-- modules/scheduler.yaml --
module: scheduler
uses: [mesh-archive]
`,
		After: `-- mesh.yaml --
name: novox
roles: [{name: mesh-archive, scope: mesh, accepts: [snapshot]}]
-- modules/scheduler.yaml --
module: scheduler
uses: [mesh-archive]
`},
	ruleInventoryUnknown: {
		Before: `-- mesh.yaml --
name: novox
-- modules/registry.yaml --
module: registry
-- inventory.yaml --
nodes:
  - {name: forge, runs: [registy]}
`,
		After: `-- mesh.yaml --
name: novox
-- modules/registry.yaml --
module: registry
-- inventory.yaml --
nodes:
  - {name: forge, runs: [registry]}
`},
	ruleRequiresUnmet: {
		Before: `-- mesh.yaml --
name: novox
-- modules/builder.yaml --
module: builder
requires: [git]
-- modules/forgejo.yaml --
module: forgejo
provides: [git]
-- inventory.yaml --
nodes:
  - {name: forge, runs: [builder]}
`,
		After: `-- mesh.yaml --
name: novox
-- modules/builder.yaml --
module: builder
requires: [git]
-- modules/forgejo.yaml --
module: forgejo
provides: [git]
-- inventory.yaml --
nodes:
  - {name: forge, runs: [builder, forgejo]}
`},
	ruleSeatUnheld: {
		Before: `-- mesh.yaml --
name: novox
roles: [{name: mesh-archive, scope: mesh, accepts: [snapshot]}]
-- modules/scheduler.yaml --
module: scheduler
uses: [mesh-archive]
-- modules/archiver.yaml --
module: archiver
claims: [mesh-archive]
-- inventory.yaml --
nodes:
  - {name: anchor, runs: [scheduler]}
`,
		After: `-- mesh.yaml --
name: novox
roles: [{name: mesh-archive, scope: mesh, accepts: [snapshot]}]
-- modules/scheduler.yaml --
module: scheduler
uses: [mesh-archive]
-- modules/archiver.yaml --
module: archiver
claims: [mesh-archive]
-- inventory.yaml --
nodes:
  - {name: anchor, runs: [scheduler, archiver]}
`},
	ruleAliasDangling: {
		Before: `-- mesh.yaml --
name: novox
roles: [{name: git, scope: mesh}]
aliases: {git-server: gitt}
-- modules/forgejo.yaml --
module: forgejo
`,
		After: `-- mesh.yaml --
name: novox
roles: [{name: git, scope: mesh}]
aliases: {git-server: git}
-- modules/forgejo.yaml --
module: forgejo
`},
	ruleEventUnheard: {
		Before: `-- mesh.yaml --
name: novox
-- modules/builder.yaml --
module: builder
emits: [built]
`,
		After: `-- mesh.yaml --
name: novox
-- modules/builder.yaml --
module: builder
emits: [built]
-- modules/catalog.yaml --
module: catalog
consumes: [builder.built]
`},
	ruleForgeableEvents: {
		Before: `-- mesh.yaml --
name: novox
isolation: shared-account    # every user in one account
-- modules/catalog.yaml --
module: catalog
tools: [lookup]
-- inventory.yaml --
nodes:
  - {name: anchor, runs: [catalog]}
people:
  - {name: bob, may-call: [catalog.lookup]}
`,
		After: `-- mesh.yaml --
name: novox
isolation: account-per-module
-- modules/catalog.yaml --
module: catalog
tools: [lookup]
-- inventory.yaml --
nodes:
  - {name: anchor, runs: [catalog]}
people:
  - {name: bob, may-call: [catalog.lookup]}
`},
	compiler.RuleUserDuplicate: {
		Before: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
-- inventory.yaml --
nodes:
  - {name: anchor, runs: [catalog, catalog]}
`,
		After: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
-- inventory.yaml --
nodes:
  - {name: anchor, runs: [catalog]}
`},
	compiler.RuleStreamCapacity: {
		Before: `-- mesh.yaml --
name: novox
limits: {max-streams: 3}   # EVENTS, CONTROL, NODES and apply's bucket are four
-- modules/registry.yaml --
module: registry
`,
		After: `-- mesh.yaml --
name: novox
-- modules/registry.yaml --
module: registry
`},
	compiler.RuleConsumerCapacity: {
		Before: `-- mesh.yaml --
name: novox
limits: {max-consumers: 1}   # CONTROL alone has two: reports and enrolments
-- modules/registry.yaml --
module: registry
`,
		After: `-- mesh.yaml --
name: novox
-- modules/registry.yaml --
module: registry
`},
	compiler.RuleLimitTooLow: {
		Before: `-- mesh.yaml --
name: novox
streams:
  events: {max-bytes: 10485760}   # 10,000 events of one subject, up to 16 KiB each, need 156 MiB
-- modules/registry.yaml --
module: registry
emits: [image.pushed]
`,
		After: `-- mesh.yaml --
name: novox
streams:
  events: {max-bytes: 10485760, max-msgs-per-subject: 100, max-msg-size: 16384}
-- modules/registry.yaml --
module: registry
emits: [image.pushed]
`},
	compiler.RuleCredentialMissing: {
		Before: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
-- inventory.yaml --
nodes:
  - {name: anchor, runs: [catalog]}
-- credentials.yaml --
mesh-controller: ` + exampleHash + `
node.anchor: ` + otherHash + `
`,
		After: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
-- inventory.yaml --
nodes:
  - {name: anchor, runs: [catalog]}
-- credentials.yaml --
mesh-controller: ` + exampleHash + `
node.anchor: ` + otherHash + `
mod.anchor.catalog: ` + thirdHash + `
`},
	ruleCredentialInvalid: {
		Before: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
-- credentials.yaml --
mesh-controller: hunter2
`,
		After: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
-- credentials.yaml --
mesh-controller: ` + exampleHash + `
`},
	ruleCredentialDuplicate: {
		Before: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
-- inventory.yaml --
people:
  - {name: bob, may-call: [catalog.lookup]}
-- credentials.yaml --
person.bob: ` + exampleHash + `
mesh-controller: ` + exampleHash + `
`,
		After: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
-- inventory.yaml --
people:
  - {name: bob, may-call: [catalog.lookup]}
-- credentials.yaml --
person.bob: ` + exampleHash + `
mesh-controller: ` + otherHash + `
`},
	ruleIgnore: {
		Before: `-- mesh.yaml --
name: novox
-- modules/builder.yaml --
module: builder
# meshc:ignore call-agreement
calls: [catalog.lookup]
`,
		After: `-- mesh.yaml --
name: novox
-- modules/builder.yaml --
module: builder
# meshc:ignore call-agreement catalog's lookup tool ships in its next release
calls: [catalog.lookup]
`},
	ruleReplay: {
		Base: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
emits: [upgraded]
-- modules/indexer.yaml --
module: indexer
consumes: [catalog.upgraded]
-- inventory.yaml --
nodes:
  - {name: anchor, runs: [catalog, indexer]}
`,
		Before: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
emits: [upgraded]
-- modules/search.yaml --
module: search        # indexer renamed: a new consumer, which starts over
consumes: [catalog.upgraded]
-- inventory.yaml --
nodes:
  - {name: anchor, runs: [catalog, search]}
`,
		After: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
emits: [upgraded]
-- modules/indexer.yaml --
module: indexer
description: Full-text search of the catalog
consumes: [catalog.upgraded]
-- inventory.yaml --
nodes:
  - {name: anchor, runs: [catalog, indexer]}
`},
	ruleRetention: {
		Base: `-- mesh.yaml --
name: novox
streams:
  events: {max-age: 720h}
-- modules/catalog.yaml --
module: catalog
emits: [upgraded]
`,
		Before: `-- mesh.yaml --
name: novox
streams:
  events: {max-age: 24h}    # a month of history cut to a day
-- modules/catalog.yaml --
module: catalog
emits: [upgraded]
`,
		After: `-- mesh.yaml --
name: novox
streams:
  events: {max-age: 720h}
-- modules/catalog.yaml --
module: catalog
emits: [upgraded]
`},
	ruleWidening: {
		Base: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
tools: [lookup, delete]
-- inventory.yaml --
people:
  - {name: bob, may-call: [catalog.lookup]}
`,
		Before: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
tools: [lookup, delete]
-- inventory.yaml --
people:
  - {name: bob, may-call: ["*"]}
`,
		After: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
tools: [lookup, delete]
-- inventory.yaml --
people:
  - {name: bob, may-call: [catalog.lookup]}
`},
	ruleApprovalUnmatched: {
		Base: `-- mesh.yaml --
name: novox
streams:
  events: {max-age: 720h}
-- modules/catalog.yaml --
module: catalog
emits: [upgraded]
`,
		Before: `-- mesh.yaml --
name: novox
streams:
  events: {max-age: 1h}    # the approval below was given for 24h, not 1h
approve:
  - {rule: retention, on: EVENTS, from: max-age 720h, to: max-age 24h, reason: nobody reads a day-old event}
-- modules/catalog.yaml --
module: catalog
emits: [upgraded]
`,
		After: `-- mesh.yaml --
name: novox
streams:
  events: {max-age: 24h}
approve:
  - {rule: retention, on: EVENTS, from: max-age 720h, to: max-age 24h, reason: nobody reads a day-old event}
-- modules/catalog.yaml --
module: catalog
emits: [upgraded]
`},
	ruleContract: {
		Base: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
tools: [lookup]
`,
		Before: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
tools: [find]    # lookup is gone: every caller's requests now go unanswered
`,
		After: `-- mesh.yaml --
name: novox
-- modules/catalog.yaml --
module: catalog
tools: [lookup, find]
`},
}
