package review

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/internal/output"
)

// compare lays out an archive's base/ and head/ catalogues and loads the head against the base
// given as a directory, as `meshc plan --against DIR` does.
func compare(t *testing.T, archive string) *Comparison {
	t.Helper()
	return compareIn(t, cataloguetest.Write(t, txtar.Parse([]byte(archive))))
}

// compareIn loads dir/head against dir/base.
func compareIn(t *testing.T, dir string) *Comparison {
	t.Helper()
	head, err := loadSide(filepath.Join(dir, "head"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(filepath.Join(dir, "head"), filepath.Join(dir, "base"), head)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// photos starts consuming registry's image.pushed on a machine it already ran on, and builder
// starts calling a tool: two existing users gain grants, neither with a wildcard or a new
// person, and both are widenings.
const photos = `-- base/mesh.yaml --
name: novox
-- base/modules/registry.yaml --
module: registry
emits: [image.pushed]
tools: [list]
-- base/modules/photos.yaml --
module: photos
-- base/modules/builder.yaml --
module: builder
-- base/inventory.yaml --
nodes:
  - {name: anchor, runs: [registry, photos, builder]}
-- head/mesh.yaml --
name: novox
-- head/modules/registry.yaml --
module: registry
emits: [image.pushed]
tools: [list]
-- head/modules/photos.yaml --
module: photos
consumes:
  - registry.image.pushed
-- head/modules/builder.yaml --
module: builder
calls: [registry.list]
-- head/inventory.yaml --
nodes:
  - {name: anchor, runs: [registry, photos, builder]}
`

// The review says who may now read what, from the consumer's filters and the consumes entries
// behind them, with the manifest line; a grant is said by what it means, its subjects after;
// and the summary counts agree with the sections and the breaks, in every format.
func TestReviewSpeaksTheCataloguesWords(t *testing.T) {
	r := compare(t, photos).Review(false)
	n := r.Count()
	widenings := 0
	for _, b := range r.Breaks {
		if b.Rule == "widening" {
			widenings++
		}
	}
	if n.UsersWidened != widenings || widenings != 2 {
		t.Errorf("%d users widened in the summary, %d widening breaks; want 2 of each", n.UsersWidened, widenings)
	}
	var text, md, js bytes.Buffer
	for f, b := range map[output.Format]*bytes.Buffer{output.Text: &text, output.Markdown: &md, output.JSON: &js} {
		if err := r.Write(b, f); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{
		"photos may now read registry's image.pushed   (",
		"modules/photos.yaml:3:5 consumes registry.image.pushed; consumer EVENTS/anchor_photos)",
		"Who reads what: 1 event read gained, 0 lost.",
		"Users and permissions: 0 users added, 0 removed, 2 with changed permissions, 2 widened, 0 re-minted.",
		"+ may read its own consumer EVENTS/anchor_photos   (",
		"subjects: pub $JS.ACK.*.*.EVENTS.anchor_photos.*.*.*.*.>, ",
		"+ may call registry's tool list   (",
		"What this change breaks: 2 breaking changes, 0 of them approved.",
		"widening: bus user mod.anchor.photos may now read its own consumer EVENTS/anchor_photos;",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text review lacks %q:\n%s", want, text.String())
		}
	}
	for _, bad := range []string{"1 users", "1 breaking changes", "0 widened", "gains pub $JS"} {
		if strings.Contains(text.String(), bad) || strings.Contains(md.String(), bad) {
			t.Errorf("the review says %q", bad)
		}
	}
	for _, want := range []string{
		"**0 users added, 0 removed, 2 with changed permissions, 2 widened, 0 re-minted**",
		"**1 event read gained, 0 lost**",
		"| `+` | photos may now read registry's image.pushed |",
		"**2 breaking changes, 0 of them approved**",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the markdown review lacks %q:\n%s", want, md.String())
		}
	}
	var doc struct {
		Review Counts `json:"review"`
		Reads  []struct {
			Reader string `json:"reader"`
			Gained []struct {
				Means   string `json:"means"`
				Subject string `json:"subject"`
			} `json:"gained"`
		} `json:"reads"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Review != n {
		t.Errorf("JSON counts %+v, the text's %+v", doc.Review, n)
	}
	if len(doc.Reads) != 1 || doc.Reads[0].Reader != "photos" || len(doc.Reads[0].Gained) != 1 ||
		doc.Reads[0].Gained[0].Means != "read registry's image.pushed" || doc.Reads[0].Gained[0].Subject != "mesh.mod.registry.event.image.pushed" {
		t.Errorf("JSON reads: %+v", doc.Reads)
	}
}

// A review of a change that does nothing says so, with counts that read right.
func TestReviewOfNothing(t *testing.T) {
	same := strings.ReplaceAll(photos[:strings.Index(photos, "-- head/")], "base/", "head/")
	r := compare(t, photos[:strings.Index(photos, "-- head/")]+same).Review(false)
	if !r.Empty() {
		t.Fatalf("a change that changes nothing: %+v", r)
	}
	var text bytes.Buffer
	if err := r.Write(&text, output.Text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "0 breaking changes, 0 of them approved") || strings.Contains(text.String(), "Who reads what") {
		t.Errorf("the review of nothing:\n%s", text.String())
	}
}

// A catalogue's paths reach every format of the review (a grant's declaration, a read's, a
// break's place), and a pull request chooses them: a manifest named to hold a workflow command
// ("##[error]…", a line starting "::") or an escape sequence is shown as lint shows it, made safe
// for a CI log and a terminal, while the JSON still decodes to the path itself.
func TestTheReviewIsSafeInACILog(t *testing.T) {
	const forged = "##[error]forged\n::warning file=x::owned\x1b[2J"
	dir := cataloguetest.Write(t, txtar.Parse([]byte(photos)))
	for _, side := range []string{"base", "head"} {
		from := filepath.Join(dir, side, "modules", "photos.yaml")
		if err := os.Rename(from, filepath.Join(dir, side, "modules", forged+".yaml")); err != nil {
			t.Skip("the file system refuses the name:", err)
		}
	}
	r := compareIn(t, dir).Review(false)
	for _, f := range []output.Format{output.Text, output.Markdown, output.JSON} {
		var b bytes.Buffer
		if err := r.Write(&b, f); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.Contains(out, "forged") {
			t.Fatalf("the %s review does not show the manifest's path at all:\n%s", f, out)
		}
		if strings.Contains(out, "##[") {
			t.Errorf("the %s review carries ##[ raw:\n%s", f, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "::") {
				t.Errorf("the %s review has a line a runner reads as a workflow command: %q", f, line)
			}
			if strings.ContainsFunc(line, func(r rune) bool { return unicode.IsControl(r) }) {
				t.Errorf("the %s review carries a control character raw: %q", f, line)
			}
		}
	}
	var doc struct {
		Reads []struct {
			Gained []struct {
				Source struct{ File string } `json:"source"`
			} `json:"gained"`
		} `json:"reads"`
	}
	var js bytes.Buffer
	if err := r.Write(&js, output.JSON); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Reads) != 1 || len(doc.Reads[0].Gained) != 1 || !strings.HasSuffix(doc.Reads[0].Gained[0].Source.File, "/modules/"+forged+".yaml") {
		t.Errorf("the JSON review does not decode to the manifest's path: %+v", doc.Reads)
	}
}
