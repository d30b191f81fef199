package catalogue

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keys.yaml is written in one order whatever the map's, reads back as written, and is never
// written holding a seed.
func TestKeysAreWrittenStablyAndPublicOnly(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, MeshFile), []byte("name: novox\nauth: operator\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, ModulesDir), 0o755)
	r := KeyRecord{
		Operator:      "OCQOHYWXQPMWXKCOYZQ3U3MZWDUSGLVMK3OIAUHHX34Q643J3PLPHMVK",
		SigningKey:    "OBULPB6YS4NP32ZXAILSBPZW4X4HRQVLMCVXTYOZMMH76UJWC4SCJW3T",
		SystemAccount: "ADWXOI7TXLVJ2VEETS5HRA7AYS5IFFUVI3MCOIXZ5ZXWGSM7Q4REJDRN",
		ProbeKey:      "ADYCUIU6DE4AU36Z63YZMURSNB5ZGFZYQCACFT2HMFIMK24L43B3WGQK",
		Accounts: map[string]string{
			"novox":              "ACTQFDADZH3FICDH4KZLQEM7R46PFQSJQ23MK2YRVUUMNCMPSCLVHGRU",
			"mod.anchor.catalog": "ABNOESIWWX735DUDZXLNRX35L2V2PQ2CJ53INQE6MKUDUTLS3AGEE4DB",
		},
	}
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(filepath.Join(dir, KeysFile))
	for range 5 {
		if err := r.Write(dir); err != nil {
			t.Fatal(err)
		}
		if again, _ := os.ReadFile(filepath.Join(dir, KeysFile)); string(again) != string(first) {
			t.Fatalf("the same keys were written two ways:\n%s\n%s", first, again)
		}
	}
	if i, j := strings.Index(string(first), "mod.anchor.catalog"), strings.Index(string(first), "novox"); i > j {
		t.Errorf("accounts are not in name order:\n%s", first)
	}
	c, findings, err := Load(dir)
	if err != nil || len(findings) > 0 {
		t.Fatalf("%v %v", err, findings)
	}
	if got := c.Keys.Record(); got.Operator != r.Operator || got.ProbeKey != r.ProbeKey || got.Accounts["novox"] != r.Accounts["novox"] || len(got.Accounts) != 2 {
		t.Errorf("read back %+v", got)
	}
	if c.Keys.Account("mod.anchor.catalog") != r.Accounts["mod.anchor.catalog"] || c.Keys.Account("ghost") != "" {
		t.Error("Account lookups")
	}

	r.Accounts["mod.anchor.catalog"] = "SAAGTT5JU3MDZZPNQ5WKAHMNK7XXITWPL4JUQX26LZKGE25DEKGVRGFBZQ"
	if err := r.Write(dir); err == nil || strings.Contains(err.Error(), "SAAG") {
		t.Errorf("a seed as an account key: %v", err)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, KeysFile)); string(now) != string(first) {
		t.Error("a refused record was written")
	}
}

// An account recorded twice is a finding: its key is its identity, so the first stays.
func TestAnAccountRecordedTwice(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, MeshFile), []byte("name: novox\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, ModulesDir), 0o755)
	os.WriteFile(filepath.Join(dir, KeysFile), []byte("accounts:\n  novox: ACTQFDADZH3FICDH4KZLQEM7R46PFQSJQ23MK2YRVUUMNCMPSCLVHGRU\n  novox: ABNOESIWWX735DUDZXLNRX35L2V2PQ2CJ53INQE6MKUDUTLS3AGEE4DB\n"), 0o644)
	c, findings, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 1 || !strings.Contains(findings[0].Message, "two recorded keys") || findings[0].Pos.Line != 3 {
		t.Errorf("findings %v", findings)
	}
	if c.Keys.Account("novox") != "ACTQFDADZH3FICDH4KZLQEM7R46PFQSJQ23MK2YRVUUMNCMPSCLVHGRU" {
		t.Error("the second key replaced the first")
	}
}
