package catalogue_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/internal/synth"
)

// Every structural fault is one finding at the place it was written, with the fix in the message:
// each line of testdata/structure.txtar says beside itself which finding it must give.
func TestStructuralFaultsAreFindingsAtTheirPlace(t *testing.T) {
	a, err := txtar.ParseFile("testdata/structure.txtar")
	if err != nil {
		t.Fatal(err)
	}
	_, findings, err := catalogue.Load(cataloguetest.Write(t, a))
	if err != nil {
		t.Fatal(err)
	}
	cataloguetest.Check(t, findings, cataloguetest.Wants(t, a))
	for i := 1; i < len(findings); i++ {
		if findings[i-1].Pos.Compare(findings[i].Pos) > 0 {
			t.Errorf("findings out of path order: %s before %s", findings[i-1], findings[i])
		}
	}
}

func TestAWellFormedCatalogueLoadsWithoutFindings(t *testing.T) {
	c, findings := cataloguetest.Load(t, "../compiler/testdata/small.txtar")
	if len(findings) != 0 {
		t.Fatalf("unexpected findings: %v", findings)
	}
	if len(c.Modules) != 4 || c.Inventory == nil || len(c.Mesh.Roles) != 2 {
		t.Fatalf("model not filled: %d modules, inventory %v, %d roles", len(c.Modules), c.Inventory, len(c.Mesh.Roles))
	}
	if got := c.Mesh.Streams.Events.MaxAge; got != 720*time.Hour {
		t.Errorf("events max-age = %v", got)
	}
	if p := c.Modules[0].Name.Pos; p.String() != "modules/audit.yaml:1:9" {
		t.Errorf("position of the first module's name = %s", p)
	}
}

func TestNotACatalogue(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Join(dir, "missing")} {
		_, _, err := catalogue.Load(d)
		if _, ok := err.(*catalogue.NotACatalogue); !ok {
			t.Errorf("Load(%s) = %v, want *NotACatalogue", d, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := catalogue.Load(filepath.Join(dir, "file")); err == nil || !strings.Contains(err.Error(), "is a file") {
		t.Errorf("a file given as the catalogue: %v", err)
	}
}

// A file that is not a document at all gets one finding, and the load neither panics nor hangs:
// each case runs against a deadline.
func TestHostileFilesGetOneFindingEach(t *testing.T) {
	var bomb strings.Builder
	bomb.WriteString("module: bomb\nx0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 12; i++ {
		bomb.WriteString("x" + strconv.Itoa(i) + ": &a" + strconv.Itoa(i) + " [")
		for j := range 9 {
			if j > 0 {
				bomb.WriteString(", ")
			}
			bomb.WriteString("*a" + strconv.Itoa(i-1))
		}
		bomb.WriteString("]\n")
	}
	bomb.WriteString("emits: *a11\n")
	huge := strings.Repeat("# padding\n", (catalogue.MaxFileSize/10)+1)

	cases := map[string]struct {
		data string
		want string
	}{
		"bomb":      {bomb.String(), "expands to more than"},
		"utf8":      {"module: ok\ndescription: \xff\xfe\n", "modules/utf8.yaml:2: error: yaml: is not valid UTF-8"},
		"empty":     {"", "is empty"},
		"huge":      {huge, "is larger than 4 MiB"},
		"tabs":      {"module: x\n\tbad: 1\n", "is not valid YAML"},
		"scalar":    {"just words\n", "a module manifest must be a mapping"},
		"binaryish": {"\x00\x01\x02", "is not valid YAML"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "mesh.yaml", "name: novox\n")
			write(t, dir, "modules/"+name+".yaml", c.data)
			done := make(chan catalogue.Findings)
			go func() {
				_, findings, err := catalogue.Load(dir)
				if err != nil {
					t.Error(err)
				}
				done <- findings
			}()
			select {
			case findings := <-done:
				if len(findings) != 1 || !strings.Contains(findings[0].String(), c.want) {
					t.Fatalf("want one finding containing %q, got %v", c.want, findings)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("loading did not finish: a hostile file must not hang the loader")
			}
		})
	}
}

func TestAMissingModulesDirectoryIsAFinding(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "mesh.yaml", "name: novox\n")
	_, findings, err := catalogue.Load(dir)
	if err != nil || len(findings) != 1 || !strings.Contains(findings[0].Message, "no modules/ directory") {
		t.Fatalf("got %v, %v", findings, err)
	}
}

func write(t *testing.T, dir, rel, data string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A 50 MB file under modules/ (a build artifact in the wrong place) is one finding, read no
// further than the limit.
func TestAFiftyMegabyteFileIsOneFinding(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "mesh.yaml", "name: novox\n")
	write(t, dir, "modules/artifact.yaml", "module: artifact\n")
	if err := os.Truncate(filepath.Join(dir, "modules/artifact.yaml"), 50<<20); err != nil {
		t.Fatal(err)
	}
	_, findings, err := catalogue.Load(dir)
	if err != nil || len(findings) != 1 || !strings.Contains(findings[0].Message, "is larger than 4 MiB") {
		t.Fatalf("got %v, %v", findings, err)
	}
}

// Only the catalogue's own regular files are read: a symlink leaving the catalogue (to a
// credentials file, say) is one finding that neither opens nor quotes it, and a named pipe is one
// finding rather than a load that blocks for ever waiting for a writer.
func TestOnlyTheCataloguesOwnFilesAreRead(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, "git-credentials", "module: SECRET-TOKEN\n")
	dir := t.TempDir()
	write(t, dir, "mesh.yaml", "name: novox\n")
	write(t, dir, "modules/ok.yaml", "module: ok\n")
	write(t, dir, "shared/linked.yaml", "module: linked\n")
	for link, target := range map[string]string{
		"modules/leak.yaml":    filepath.Join(outside, "git-credentials"),
		"modules/linked.yaml":  filepath.Join(dir, "shared/linked.yaml"), // inside: read
		"modules/up.yaml":      "../../" + filepath.Base(outside) + "/git-credentials",
		"inventory.yaml":       filepath.Join(outside, "git-credentials"),
		"modules/dangle.yaml":  filepath.Join(outside, "nothing-here"),
		"modules/devnull.yaml": "/dev/zero",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "modules/pipe.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}

	done := make(chan struct{})
	var c *catalogue.Catalogue
	var findings catalogue.Findings
	go func() {
		defer close(done)
		var err error
		c, findings, err = catalogue.Load(dir)
		if err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("loading did not finish: a named pipe must not be opened")
	}
	want := []string{
		"inventory.yaml: error: yaml: is a symbolic link to a file outside the catalogue",
		"modules/dangle.yaml: error: yaml: cannot be read",
		"modules/devnull.yaml: error: yaml: is a symbolic link to a file outside the catalogue",
		"modules/leak.yaml: error: yaml: is a symbolic link to a file outside the catalogue",
		"modules/pipe.yaml: error: yaml: is a named pipe (FIFO), so it is not read",
		"modules/up.yaml: error: yaml: is a symbolic link to a file outside the catalogue",
	}
	if len(findings) != len(want) {
		t.Fatalf("got %d findings, want %d:\n%s", len(findings), len(want), findings)
	}
	for i, f := range findings {
		if !strings.HasPrefix(f.String(), want[i]) {
			t.Errorf("finding %d:\n got %s\nwant %s", i, f, want[i])
		}
		if strings.Contains(f.String(), "SECRET") || strings.Contains(f.String(), outside) {
			t.Errorf("a finding quotes what is outside the catalogue: %s", f)
		}
	}
	var names []string
	for _, m := range c.Modules {
		names = append(names, m.Name.Value)
	}
	if strings.Join(names, " ") != "linked ok" {
		t.Errorf("modules read: %v; want the two inside the catalogue", names)
	}
}

// A modules/ directory that is a symlink out of the catalogue is not walked.
func TestASymlinkedModulesDirectoryOutsideIsNotWalked(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, "secret.yaml", "module: SECRET-TOKEN\n")
	dir := t.TempDir()
	write(t, dir, "mesh.yaml", "name: novox\n")
	if err := os.Symlink(outside, filepath.Join(dir, "modules")); err != nil {
		t.Fatal(err)
	}
	c, findings, err := catalogue.Load(dir)
	if err != nil || len(findings) != 1 || !strings.Contains(findings[0].String(), "modules: error: yaml: is a symbolic link to a directory outside") || len(c.Modules) != 0 {
		t.Fatalf("got %v, %v", findings, err)
	}
}

// No message quotes a whole value: a megabyte pasted where a name belongs is quoted as an
// excerpt, in the loader's findings and in lint's.
func TestMessagesQuoteOnlyAnExcerpt(t *testing.T) {
	long := strings.Repeat("x", 5000)
	dir := t.TempDir()
	write(t, dir, "mesh.yaml", "name: novox\n"+long+": 1\n")
	write(t, dir, "modules/a.yaml", "module: [1]\ndescription: 7"+strings.Repeat("1", 5000)+"\nemits: "+long+"\n")
	_, findings, err := catalogue.Load(dir)
	if err != nil || len(findings) < 3 {
		t.Fatalf("got %v, %v", findings, err)
	}
	for _, f := range findings {
		if len(f.Message) > 400 {
			t.Errorf("%s: message of %d bytes quotes a whole value", f.Pos, len(f.Message))
		}
	}
}

// The alias guard bounds what aliases add, not the file's own size: a 100,000-module
// catalogue's inventory (megabytes, no alias, one person granted ["*"]) loads, while the
// billion-laughs file of TestHostileFilesGetOneFindingEach still fails.
func TestALargeHonestInventoryIsNotAnAliasBomb(t *testing.T) {
	files, err := synth.Files(100_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	inv := files["inventory.yaml"]
	if len(inv) < 2<<20 || !strings.Contains(string(inv), `["*"]`) {
		t.Fatalf("the generated inventory is %d bytes; the case needs a multi-megabyte one with a [\"*\"] grant", len(inv))
	}
	dir := t.TempDir()
	write(t, dir, "mesh.yaml", "name: novox\n")
	write(t, dir, "modules/a.yaml", "module: a\n")
	write(t, dir, "inventory.yaml", string(inv))
	c, findings, err := catalogue.Load(dir)
	if err != nil || len(findings) != 0 {
		t.Fatalf("got %v, %v", findings, err)
	}
	if len(c.Inventory.Nodes) != 25_000 {
		t.Errorf("%d machines read", len(c.Inventory.Nodes))
	}
}

// A YAML syntax error is placed at the real fault, with its column, and the known traps say
// how to fix them. The parser's own line is where it gave up: for an indentation fault, often
// a line above the one that is wrong.
func TestYAMLSyntaxErrorsPointAtTheFault(t *testing.T) {
	for name, c := range map[string]struct{ data, want string }{
		"tab":         {"module: x\nemits: [a]\n\tcalls: [b]\n", "modules/m.yaml:3:1: error: yaml: is not valid YAML: found character that cannot start any token; a tab indents this line"},
		"bare-stars":  {"module: x\nconsumes: [**]\n", "modules/m.yaml:2:12: error: yaml: is not valid YAML: did not find expected alphabetic or numeric character; a bare ** starts an alias (*name) in YAML: quote it, \"**\""},
		"bare-star":   {"module: x\nconsumes:\n  - *\n", "modules/m.yaml:3:5: error: yaml: is not valid YAML: did not find expected alphabetic or numeric character; a bare * starts an alias"},
		"item-indent": {"module: x\nemits:\n  - a\n - b\n", "modules/m.yaml:4:2: error: yaml: is not valid YAML: did not find expected key; this line is indented differently"},
		"seat-indent": {"module: x\nseats:\n  - name: a\n    scope: mesh\n   accepts: [x]\n", "modules/m.yaml:5:4: error: yaml: is not valid YAML: did not find expected '-' indicator; this line is indented differently"},
		"over-indent": {"module: x\n  emits: [a]\n", "modules/m.yaml:2:3: error: yaml: is not valid YAML: mapping values are not allowed in this context; this line is indented differently"},
		"unclosed":    {"module: [unclosed\n", "modules/m.yaml:1: error: yaml: is not valid YAML: did not find expected ',' or ']'"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "mesh.yaml", "name: novox\n")
			write(t, dir, "modules/m.yaml", c.data)
			_, findings, err := catalogue.Load(dir)
			if err != nil || len(findings) != 1 || !strings.HasPrefix(findings[0].String(), c.want) {
				t.Fatalf("got %v, %v\nwant one finding starting %s", findings, err, c.want)
			}
		})
	}
}

// Durations take the NATS CLI's units as well as Go's: `max-age: 7d` was refused although
// `nats stream add --max-age 7d` is how an operator writes it.
func TestDurationsTakeTheNATSCLIsUnits(t *testing.T) {
	day := 24 * time.Hour
	for in, want := range map[string]time.Duration{
		"90s": 90 * time.Second, "10m": 10 * time.Minute, "720h": 720 * time.Hour, "1h30m": 90 * time.Minute,
		"7d": 7 * day, "2w": 14 * day, "1M": 30 * day, "1y": 365 * day, "1w2d": 9 * day, "1.5d": 36 * time.Hour,
		"500ms": 500 * time.Millisecond, "1D": day, "1Y": 365 * day,
	} {
		if got, err := catalogue.ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "10 days", "7", "d", "-1d", "1x", "1d junk2h", "999999999y"} {
		if got, err := catalogue.ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) = %v; want an error", bad, got)
		}
	}
	dir := t.TempDir()
	write(t, dir, "mesh.yaml", "name: novox\nstreams:\n  events: {max-age: 7d}\n")
	write(t, dir, "modules/a.yaml", "module: a\n")
	c, findings, err := catalogue.Load(dir)
	if err != nil || len(findings) != 0 || c.Mesh.Streams.Events.MaxAge != 7*day {
		t.Fatalf("max-age: 7d: %v %v", findings, err)
	}
}

// isolation and auth take one of their words; anything else is a finding naming the words, and
// leaving them out means the shared account and passwords.
func TestIsolationAndAuthTakeTheirWords(t *testing.T) {
	load := func(mesh string) (*catalogue.Catalogue, catalogue.Findings) {
		c, findings, err := catalogue.Load(cataloguetest.Write(t, &txtar.Archive{Files: []txtar.File{
			{Name: "mesh.yaml", Data: []byte("name: m\n" + mesh)},
			{Name: "modules/a.yaml", Data: []byte("module: a\n")},
		}}))
		if err != nil {
			t.Fatal(err)
		}
		return c, findings
	}
	c, findings := load("isolation: account-per-module\nauth: nkey\n")
	if len(findings) != 0 || !c.Mesh.PerModule() || !c.Mesh.NKeys() {
		t.Fatalf("per-module nkey mesh: per-module %v, nkeys %v, findings %v", c.Mesh.PerModule(), c.Mesh.NKeys(), findings)
	}
	// Saying nothing is an account per module, and passwords.
	c, findings = load("")
	if len(findings) != 0 || !c.Mesh.PerModule() || c.Mesh.NKeys() {
		t.Fatalf("a mesh saying nothing: per-module %v, nkeys %v, findings %v", c.Mesh.PerModule(), c.Mesh.NKeys(), findings)
	}
	c, findings = load("isolation: shared-account\n")
	if len(findings) != 0 || c.Mesh.PerModule() {
		t.Fatalf("a shared-account mesh: per-module %v, findings %v", c.Mesh.PerModule(), findings)
	}
	_, findings = load("isolation: per-module\nauth: token\n")
	want := []string{
		`mesh.yaml:2:12: error: yaml: isolation must be shared-account or account-per-module, not "per-module"`,
		`mesh.yaml:3:7: error: yaml: auth must be password, nkey or operator, not "token"`,
	}
	if len(findings) != len(want) {
		t.Fatalf("got %v, want %v", findings, want)
	}
	for i, f := range findings {
		if f.String() != want[i] {
			t.Errorf("got %s, want %s", f, want[i])
		}
	}
}
