package emit

import (
	"fmt"
	"testing"

	"github.com/meshc-dev/meshc/compiler"
)

// BenchmarkAccounts10k renders a mesh of 10,000 users, each with a module's worth of grants.
func BenchmarkAccounts10k(b *testing.B) {
	p := &compiler.Plan{Account: "novox"}
	for i := range 10000 {
		node, mod := fmt.Sprintf("n%d", i/10), fmt.Sprintf("m%d", i%10)
		c := node + "_" + mod
		p.Users = append(p.Users, compiler.User{
			Name: "mod." + node + "." + mod, Kind: compiler.KindModule, Hash: recorded[i%len(recorded)],
			Publish: allow("$JS.ACK.*.*.EVENTS."+c+".*.*.*.*.>", "$JS.ACK.EVENTS."+c+".*.*.*.*.*", "$JS.API.CONSUMER.INFO.EVENTS."+c,
				"$JS.API.CONSUMER.MSG.NEXT.EVENTS."+c, "mesh.mod."+mod+".event.done", "mesh.mod.other.tool.ask"),
			Subscribe:      allow("_INBOX.mod."+node+"."+mod+".>", "mesh.mod."+mod+".tool.ask"),
			AllowResponses: true,
		})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Accounts(p, AccountsOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
