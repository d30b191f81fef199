package apply

import "meshc/compiler"

// StateStream is the stream behind compiler.ApplyBucket, where apply keeps its lock and the
// resume points of consumers it replaces: apply's own, never in a plan, never pruned.
const StateStream = "KV_" + compiler.ApplyBucket
