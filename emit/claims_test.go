package emit

import (
	"bytes"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/compiler"
)

// operatorPlan is testPlan with auth: operator: fixed public keys, so the golden file is fixed.
func operatorPlan() *compiler.Plan {
	p := testPlan()
	p.Operator = &compiler.OperatorKeys{
		Operator:      "OCQOHYWXQPMWXKCOYZQ3U3MZWDUSGLVMK3OIAUHHX34Q643J3PLPHMVK",
		SigningKey:    "OBULPB6YS4NP32ZXAILSBPZW4X4HRQVLMCVXTYOZMMH76UJWC4SCJW3T",
		SystemAccount: "ADWXOI7TXLVJ2VEETS5HRA7AYS5IFFUVI3MCOIXZ5ZXWGSM7Q4REJDRN",
		ProbeKey:      "ADYCUIU6DE4AU36Z63YZMURSNB5ZGFZYQCACFT2HMFIMK24L43B3WGQK",
		Accounts:      map[string]string{"novox": "ACTQFDADZH3FICDH4KZLQEM7R46PFQSJQ23MK2YRVUUMNCMPSCLVHGRU"},
	}
	signing := []string{
		"AAWNSXKL4LLANRKCOWPNTH6AL6MDOIAOQC24SOJM6VHY6YKKUHOAQD5Q",
		"ABNOESIWWX735DUDZXLNRX35L2V2PQ2CJ53INQE6MKUDUTLS3AGEE4DB",
		"ACPOBFG4UAJC7BWL4WEYS7VPLWNKMRXMV4X2FE5UCMQE3FZW4DAZIK67",
		"ABA3EY2FN765YA3JJ6SPMFRB7MQI4ILSSQDEYRNYBVAGTGB73KIJK4VN",
		"ACSTYIUB3QHKKHTWDKSOWYBEJ2VGG6JEGXGIPQVJKX5VLQM4I7SGUNEV",
	}
	for i := range p.Users {
		p.Users[i].Hash, p.Users[i].SigningKey = "", signing[i]
		p.Users[i].Account = "novox"
	}
	return p
}

// claims.json is the golden form of what apply pushes: stable bytes, `>` as itself, a key's
// grants readable in a diff; no secret and nothing signing stamps.
func TestClaimsGolden(t *testing.T) {
	first, err := Claims(operatorPlan(), AccountsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "claims.json.golden", first)
	second, _ := Claims(operatorPlan(), AccountsOptions{})
	if !bytes.Equal(first, second) {
		t.Fatal("two renderings of one plan differ")
	}
	for _, absent := range []string{`\u003e`, `"iat"`, `"jti"`, `"iss"`, `"SO`, `"SA`} {
		if bytes.Contains(first, []byte(absent)) {
			t.Errorf("claims.json holds %s", absent)
		}
	}
	r, err := Render(operatorPlan(), AccountsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Files) != 3 || r.Files[0].Name != ClaimsFile || !bytes.Equal(bytesOf(t, r.Files[0]), first) || r.Retired != AccountsFile {
		t.Error("Render in operator mode does not give claims.json in place of accounts.conf")
	}
}

// A user with no recorded signing key is refused, naming the mint, unless left out on purpose
// (then the file says so); a catalogue with no operator yet says how to make one.
func TestClaimsRefuses(t *testing.T) {
	p := operatorPlan()
	p.Users[2].SigningKey = ""
	if _, err := Claims(p, AccountsOptions{}); err == nil || !strings.Contains(err.Error(), "mod.anchor.catalog") || !strings.Contains(err.Error(), "meshc mint --missing") {
		t.Errorf("a user with no key: %v", err)
	}
	out, err := Claims(p, AccountsOptions{AllowMissing: true})
	if err != nil || !bytes.Contains(out, []byte(`"left_out": [`)) || bytes.Count(out, []byte(`"role": "mod.anchor.catalog"`)) != 0 {
		t.Errorf("left out on purpose: %v\n%s", err, out)
	}
	p.Operator.Operator = ""
	if _, err := Claims(p, AccountsOptions{}); err == nil || !strings.Contains(err.Error(), "meshc operator init") {
		t.Errorf("no operator: %v", err)
	}
}
