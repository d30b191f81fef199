package review

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/internal/output"
)

var update = flag.Bool("update", false, "rewrite testdata/comment.* from the current review")

// The pull-request comment CI posts, and the same review as text and JSON, are golden files: a
// change to any of them is a change a reviewer sees in this package's diff. The catalogue pair
// (testdata/comment.txtar) touches every section: streams and consumers, who reads what, users,
// accounts, breaks approved and not, and an approval that approves nothing. `go test ./review
// -update` rewrites them.
func TestThePullRequestComment(t *testing.T) {
	a, err := txtar.ParseFile("testdata/comment.txtar")
	if err != nil {
		t.Fatal(err)
	}
	golden, _ := filepath.Abs("testdata")
	// From the archive's directory, as CI runs `meshc plan head --against base`: positions read
	// head/… and base/…, the same on every machine.
	t.Chdir(cataloguetest.Write(t, a))
	r := compareIn(t, ".").Review(false)
	for _, f := range []struct {
		format output.Format
		file   string
	}{{output.Markdown, "comment.md"}, {output.Text, "comment.txt"}, {output.JSON, "comment.json"}} {
		var b bytes.Buffer
		if err := r.Write(&b, f.format); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(golden, f.file)
		if *update {
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("the %s review differs from testdata/%s (go test ./review -update rewrites it):\n%s", f.format, f.file, b.String())
		}
	}
}
