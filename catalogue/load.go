package catalogue

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// MaxFileSize bounds every catalogue file. A manifest is a few kilobytes; a file many megabytes
// long is a mistake (a build artifact under modules/, say), and parsing it would only make
// pre-commit hang before saying so.
const MaxFileSize = 4 << 20

// The files of a catalogue, relative to its directory (docs/catalogue.md, "The catalogue format").
const (
	MeshFile        = "mesh.yaml"
	ModulesDir      = "modules"
	InventoryFile   = "inventory.yaml"
	CredentialsFile = "credentials.yaml"
	// GoldenDir holds the golden files meshc emit writes (their names are emit's).
	GoldenDir = "golden"
)

// NotACatalogue is the error Load returns when DIR cannot be read as a catalogue at all: it has
// no mesh.yaml, or it cannot be read. Everything wrong inside a catalogue is a finding instead.
type NotACatalogue struct {
	Dir    string
	Reason string
}

func (e *NotACatalogue) Error() string {
	return fmt.Sprintf("%s is not a catalogue: %s", e.Dir, e.Reason)
}

// Load reads the catalogue in dir. Structural faults in its files are findings (rule "yaml"),
// and the model holds whatever could be read around them. The error is non-nil only when dir is
// not a catalogue at all (*NotACatalogue) — meshc's exit 2 rather than a finding's exit 1.
func Load(dir string) (*Catalogue, Findings, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, nil, &NotACatalogue{Dir: dir, Reason: plainError(err)}
	}
	if !info.IsDir() {
		return nil, nil, &NotACatalogue{Dir: dir, Reason: "it is a file; give the directory that holds mesh.yaml"}
	}
	if _, err := os.Stat(filepath.Join(dir, MeshFile)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, &NotACatalogue{Dir: dir, Reason: "it has no mesh.yaml; run meshc in the directory that holds mesh.yaml, or name it"}
		}
		return nil, nil, &NotACatalogue{Dir: dir, Reason: plainError(err)}
	}

	// Every file is checked against the catalogue's real directory, so a symlink that leaves it
	// is refused however the catalogue itself was named (a relative path, a symlinked checkout).
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, nil, &NotACatalogue{Dir: dir, Reason: plainError(err)}
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, nil, &NotACatalogue{Dir: dir, Reason: plainError(err)}
	}
	c := &Catalogue{Dir: dir}
	var findings Findings
	own := newOwnFiles(root)

	// The inventory, credentials.yaml and keys.yaml are decoded beside the manifests rather than
	// after them: each is one file, decoded on one core, and the inventory of 100,000 modules
	// alone is 2.8 MB of YAML (a minted mesh's credentials.yaml more), which decoded last kept
	// the other cores idle. What each finds is gathered in the order they were read before.
	type side struct {
		findings Findings
		ignores  []Ignore
	}
	var inventory, credentials, keys side
	var sides sync.WaitGroup
	if exists(dir, InventoryFile) {
		c.Inventory = &Inventory{File: InventoryFile}
		sides.Go(func() {
			if doc := readOptional(own, InventoryFile, &inventory.findings, &inventory.ignores); doc != nil {
				newDecoder(InventoryFile, &inventory.findings).inventory(doc, c.Inventory)
			}
		})
	}
	if exists(dir, CredentialsFile) {
		c.Credentials = &Credentials{File: CredentialsFile, Hashes: map[string]Text{}}
		sides.Go(func() {
			if doc := readOptional(own, CredentialsFile, &credentials.findings, &credentials.ignores); doc != nil {
				newDecoder(CredentialsFile, &credentials.findings).credentials(doc, c.Credentials)
			}
		})
	}
	if exists(dir, KeysFile) {
		c.Keys = &Keys{File: KeysFile, Accounts: map[string]Text{}}
		sides.Go(func() {
			if doc := readOptional(own, KeysFile, &keys.findings, &keys.ignores); doc != nil {
				newDecoder(KeysFile, &keys.findings).keys(doc, c.Keys)
			}
		})
	}

	c.Mesh = &Mesh{File: MeshFile}
	if doc := readDocument(own, MeshFile, &findings, &c.Ignores); doc != nil {
		newDecoder(MeshFile, &findings).mesh(doc, c.Mesh)
	}
	manifests, err := manifestFiles(root, &findings)
	if err != nil {
		sides.Wait()
		return nil, nil, &NotACatalogue{Dir: dir, Reason: err.Error()}
	}
	c.Modules = loadModules(own, manifests, &findings, &c.Ignores)

	sides.Wait()
	for _, s := range []side{inventory, credentials, keys} {
		findings = append(findings, s.findings...)
		c.Ignores = append(c.Ignores, s.ignores...)
	}
	c.Files = own.read
	return c, findings.Sorted(), nil
}

// loadModules reads the manifests in parallel — parsing YAML is nearly all of a large
// catalogue's cost — and returns them in path order whatever order they finished in.
func loadModules(own *ownFiles, files []string, findings *Findings, ignores *[]Ignore) []*Module {
	type result struct {
		module   *Module
		findings Findings
		ignores  []Ignore
	}
	results := make([]result, len(files))
	var wg sync.WaitGroup
	next := make(chan int)
	for range max(1, min(len(files), 8)) {
		wg.Go(func() {
			for i := range next {
				var fs Findings
				if doc := readDocument(own, files[i], &fs, &results[i].ignores); doc != nil {
					m := &Module{File: files[i]}
					newDecoder(files[i], &fs).module(doc, m)
					results[i].module = m
				}
				results[i].findings = fs
			}
		})
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()

	modules := make([]*Module, 0, len(files))
	for _, r := range results {
		*findings = append(*findings, r.findings...)
		*ignores = append(*ignores, r.ignores...)
		if r.module != nil {
			modules = append(modules, r.module)
		}
	}
	return modules
}

// manifestFiles lists modules/**/*.yaml in path order. A .yml file is reported rather than read
// or skipped in silence: its author expects it to count.
func manifestFiles(dir string, findings *Findings) ([]string, error) {
	root := filepath.Join(dir, ModulesDir)
	info, err := os.Lstat(root)
	if errors.Is(err, fs.ErrNotExist) {
		*findings = append(*findings, RuleYAML.At(Pos{File: MeshFile}, "the catalogue has no modules/ directory; put one manifest per module in modules/<module>.yaml"))
		return nil, nil
	}
	if err == nil && info.Mode()&fs.ModeSymlink != 0 {
		// WalkDir does not follow a symlinked root; following it by hand must stay inside.
		real, err := filepath.EvalSymlinks(root)
		if err != nil || !inside(dir, real) {
			*findings = append(*findings, RuleYAML.At(Pos{File: ModulesDir}, "is a symbolic link to a directory outside the catalogue, so no manifest is read; the manifests live in the catalogue"))
			return nil, nil
		}
		root = real
	}
	var files []string
	err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading %s: %s", p, plainError(err))
		}
		if e.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = path.Join(ModulesDir, filepath.ToSlash(rel))
		switch path.Ext(rel) {
		case ".yaml":
			files = append(files, rel)
		case ".yml":
			*findings = append(*findings, RuleYAML.At(Pos{File: rel}, "manifests end in .yaml, so this file is not read; rename it to %s.yaml", strings.TrimSuffix(rel, ".yml")))
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// readDocument reads one file and parses its single YAML document. Every way a file can fail to
// be a document — unreadable, too large, not UTF-8, empty, not YAML, two documents — is one
// finding, and nil is returned.
func readDocument(own *ownFiles, rel string, findings *Findings, ignores *[]Ignore) *yaml.Node {
	return readFile(own, rel, false, findings, ignores)
}

// readOptional reads inventory.yaml or credentials.yaml, which may be empty or hold only
// comments: a catalogue with no hashes recorded yet is ordinary.
func readOptional(own *ownFiles, rel string, findings *Findings, ignores *[]Ignore) *yaml.Node {
	return readFile(own, rel, true, findings, ignores)
}

// readFile also collects the file's meshc:ignore comments into ignores.
func readFile(src *ownFiles, rel string, emptyIsFine bool, findings *Findings, ignores *[]Ignore) *yaml.Node {
	fail := func(line int, format string, args ...any) *yaml.Node {
		*findings = append(*findings, RuleYAML.At(Pos{File: rel, Line: line}, format, args...))
		return nil
	}
	failAt := func(y yamlFault) *yaml.Node {
		*findings = append(*findings, RuleYAML.At(Pos{File: rel, Line: y.line, Col: y.col}, "is not valid YAML: %s", y.msg))
		return nil
	}
	f, size, refusal := src.open(rel)
	if f == nil {
		return fail(0, "%s", refusal)
	}
	defer f.Close()
	var data []byte
	if size <= MaxFileSize {
		data = make([]byte, 0, size+1) // one read, no regrowth
	}
	data, err := readAll(io.LimitReader(f, MaxFileSize+1), data)
	if err != nil {
		return fail(0, "cannot be read: %s", plainError(err))
	}
	src.digested(rel, data)
	if len(data) > MaxFileSize {
		return fail(0, "is larger than %d MiB; a catalogue file is a few kilobytes of YAML — is this file in the wrong place?", MaxFileSize>>20)
	}
	if !utf8.Valid(data) {
		return fail(lineOfInvalidUTF8(data), "is not valid UTF-8; save it as UTF-8")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if emptyIsFine {
			return nil
		}
		return fail(0, "is empty; write its YAML, or delete it")
	}

	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			if emptyIsFine {
				return nil
			}
			return fail(0, "holds only comments; write its YAML, or delete it")
		}
		return failAt(locateYAMLError(data, err))
	}
	var second yaml.Node
	if err := dec.Decode(&second); err == nil {
		return fail(second.Line, "holds a second YAML document (after ---); a catalogue file holds one")
	} else if !errors.Is(err, io.EOF) {
		return failAt(locateYAMLError(data, err))
	}
	if len(doc.Content) == 0 {
		return fail(0, "is empty; write its YAML, or delete it")
	}
	*ignores = append(*ignores, ignoresIn(rel, data, &doc)...)
	// Aliases may add at most maxAliasValues to what the file itself holds: an honest file
	// (100,000 modules' inventory, 3.8 MB, no alias at all) is as large as it is, while a
	// "billion laughs" file of nested aliases is a few hundred bytes that expand without bound.
	own, aliases := ownSize(doc.Content[0])
	if aliases == 0 {
		return doc.Content[0]
	}
	if n := expandedSize(doc.Content[0], map[*yaml.Node]int{}, own+maxAliasValues); n > own+maxAliasValues {
		return fail(0, "expands to more than %d values beyond its own through its aliases (&anchor/*alias): "+
			"a file this small cannot mean that much; write the values out instead of nesting aliases", maxAliasValues)
	}
	return doc.Content[0]
}

// maxAliasValues bounds how many values aliases may add to a file. A manifest's aliases add
// tens of values; a "billion laughs" file adds without bound, which would hang pre-commit rather
// than fail it.
const maxAliasValues = 100_000

// ownSize counts the values written in the file, an alias counting as one, and the aliases.
func ownSize(n *yaml.Node) (values, aliases int) {
	values = 1
	if n.Kind == yaml.AliasNode {
		return 1, 1
	}
	for _, c := range n.Content {
		v, a := ownSize(c)
		values += v
		aliases += a
	}
	return values, aliases
}

// expandedSize counts the values a node stands for once every alias is followed, memoised per
// node so the count itself costs only the size of the file; it stops counting past bound.
func expandedSize(n *yaml.Node, memo map[*yaml.Node]int, bound int) int {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return 1
		}
		return expandedSize(n.Alias, memo, bound)
	}
	if size, ok := memo[n]; ok {
		return size
	}
	memo[n] = bound + 1 // an anchor containing itself counts as unbounded
	size := 1
	for _, c := range n.Content {
		size += expandedSize(c, memo, bound)
		if size > bound {
			break
		}
	}
	memo[n] = size
	return size
}

// readAll is io.ReadAll into a buffer the caller may have sized already.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

func lineOfInvalidUTF8(data []byte) int {
	line := 1
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		if r == utf8.RuneError && size <= 1 {
			return line
		}
		if r == '\n' {
			line++
		}
		data = data[size:]
	}
	return line
}

func exists(dir, rel string) bool {
	_, err := os.Lstat(filepath.Join(dir, rel))
	return err == nil
}

// plainError drops the path an *fs.PathError repeats, since findings already name the file.
func plainError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
