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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// MaxFileSize bounds every catalogue file. A manifest is a few kilobytes; a file many megabytes
// long is a mistake (a build artifact under modules/, say), and parsing it would only make
// pre-commit hang before saying so.
const MaxFileSize = 4 << 20

// The files of a catalogue, relative to its directory (SPEC §1).
const (
	MeshFile        = "mesh.yaml"
	ModulesDir      = "modules"
	InventoryFile   = "inventory.yaml"
	CredentialsFile = "credentials.yaml"
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

	c := &Catalogue{Dir: dir}
	var findings Findings

	c.Mesh = &Mesh{File: MeshFile}
	if doc := readDocument(dir, MeshFile, &findings); doc != nil {
		newDecoder(MeshFile, &findings).mesh(doc, c.Mesh)
	}

	manifests, err := manifestFiles(dir, &findings)
	if err != nil {
		return nil, nil, &NotACatalogue{Dir: dir, Reason: err.Error()}
	}
	c.Modules = loadModules(dir, manifests, &findings)

	if exists(dir, InventoryFile) {
		c.Inventory = &Inventory{File: InventoryFile}
		if doc := readOptional(dir, InventoryFile, &findings); doc != nil {
			newDecoder(InventoryFile, &findings).inventory(doc, c.Inventory)
		}
	}
	if exists(dir, CredentialsFile) {
		c.Credentials = &Credentials{File: CredentialsFile, Hashes: map[string]Text{}}
		if doc := readOptional(dir, CredentialsFile, &findings); doc != nil {
			newDecoder(CredentialsFile, &findings).credentials(doc, c.Credentials)
		}
	}
	return c, findings.Sorted(), nil
}

// loadModules reads the manifests in parallel — parsing YAML is nearly all of a large
// catalogue's cost — and returns them in path order whatever order they finished in.
func loadModules(dir string, files []string, findings *Findings) []*Module {
	type result struct {
		module   *Module
		findings Findings
	}
	results := make([]result, len(files))
	var wg sync.WaitGroup
	next := make(chan int)
	for range max(1, min(len(files), 8)) {
		wg.Go(func() {
			for i := range next {
				var fs Findings
				if doc := readDocument(dir, files[i], &fs); doc != nil {
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
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		*findings = append(*findings, Finding{
			Pos: Pos{File: MeshFile}, Rule: RuleYAML, Severity: Error,
			Message: "the catalogue has no modules/ directory; put one manifest per module in modules/<module>.yaml",
		})
		return nil, nil
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading %s: %s", p, plainError(err))
		}
		if e.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch path.Ext(rel) {
		case ".yaml":
			files = append(files, rel)
		case ".yml":
			*findings = append(*findings, Finding{
				Pos: Pos{File: rel}, Rule: RuleYAML, Severity: Error,
				Message: "manifests end in .yaml, so this file is not read; rename it to " +
					strings.TrimSuffix(rel, ".yml") + ".yaml",
			})
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// readDocument reads one file and parses its single YAML document. Every way a file can fail to
// be a document — unreadable, too large, not UTF-8, empty, not YAML, two documents — is one
// finding, and nil is returned.
func readDocument(dir, rel string, findings *Findings) *yaml.Node {
	return readFile(dir, rel, false, findings)
}

// readOptional reads inventory.yaml or credentials.yaml, which may be empty or hold only
// comments: a catalogue with no hashes recorded yet is ordinary.
func readOptional(dir, rel string, findings *Findings) *yaml.Node {
	return readFile(dir, rel, true, findings)
}

func readFile(dir, rel string, emptyIsFine bool, findings *Findings) *yaml.Node {
	fail := func(line int, format string, args ...any) *yaml.Node {
		*findings = append(*findings, Finding{
			Pos: Pos{File: rel, Line: line}, Rule: RuleYAML, Severity: Error, Message: fmt.Sprintf(format, args...),
		})
		return nil
	}
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return fail(0, "cannot be read: %s", plainError(err))
	}
	defer f.Close()
	var data []byte
	if info, err := f.Stat(); err == nil {
		if !info.Mode().IsRegular() {
			return fail(0, "is not a regular file; a catalogue file holds one YAML document")
		}
		if info.Size() <= MaxFileSize {
			data = make([]byte, 0, info.Size()+1) // one read, no regrowth
		}
	}
	data, err = readAll(io.LimitReader(f, MaxFileSize+1), data)
	if err != nil {
		return fail(0, "cannot be read: %s", plainError(err))
	}
	if len(data) > MaxFileSize {
		return fail(0, "is larger than %d MiB; a catalogue file is a few kilobytes of YAML — is this file in the wrong place?", MaxFileSize>>20)
	}
	if !utf8.Valid(data) {
		return fail(lineOfInvalidUTF8(data), "is not valid UTF-8; save it as UTF-8")
	}
	if strings.TrimSpace(string(data)) == "" {
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
		line, msg := yamlErrorLine(err)
		return fail(line, "is not valid YAML: %s", msg)
	}
	var second yaml.Node
	if err := dec.Decode(&second); err == nil {
		return fail(second.Line, "holds a second YAML document (after ---); a catalogue file holds one")
	} else if !errors.Is(err, io.EOF) {
		line, msg := yamlErrorLine(err)
		return fail(line, "is not valid YAML: %s", msg)
	}
	if len(doc.Content) == 0 {
		return fail(0, "is empty; write its YAML, or delete it")
	}
	// An alias is written *name: a file without a '*' has none, and nothing to measure.
	if !bytes.ContainsRune(data, '*') {
		return doc.Content[0]
	}
	if n := expandedSize(doc.Content[0], map[*yaml.Node]int{}); n > maxExpandedNodes {
		return fail(0, "expands to more than %d values through its aliases (&anchor/*alias): "+
			"a file this small cannot mean that much; write the values out instead of nesting aliases", maxExpandedNodes)
	}
	return doc.Content[0]
}

// maxExpandedNodes bounds how many values one file may expand to. A manifest is tens of values;
// a "billion laughs" file of nested aliases is a few hundred bytes on disk and expands without
// bound, which would hang pre-commit rather than fail it.
const maxExpandedNodes = 100_000

// expandedSize counts the values a node stands for once every alias is followed, memoised per
// node so the count itself costs only the size of the file; it stops counting past the bound.
func expandedSize(n *yaml.Node, memo map[*yaml.Node]int) int {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return 1
		}
		return expandedSize(n.Alias, memo)
	}
	if size, ok := memo[n]; ok {
		return size
	}
	memo[n] = maxExpandedNodes + 1 // an anchor containing itself counts as unbounded
	size := 1
	for _, c := range n.Content {
		size += expandedSize(c, memo)
		if size > maxExpandedNodes {
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

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlErrorLine pulls the line out of a yaml.v3 error, whose errors are text.
func yamlErrorLine(err error) (int, string) {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return line, m[2]
	}
	return 0, strings.TrimPrefix(msg, "yaml: ")
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
