// Package review is what a pull request shows a reviewer: the catalogue compared with its base
// (`--against REF`), loaded from git or a directory, and everything the change does to a bus
// that runs the base — streams and consumers, who reads what, users and their grants, accounts
// and their exports and imports, and what it breaks (lint's breaking rules, with the approvals
// mesh.yaml gives). A Review is rendered as text or markdown from one model of sections and rows
// (rows.go), or as one JSON Document; whatever came from the catalogue is escaped as lint
// escapes it, so the pull-request comment and the CI log are safe from what a change chooses.
package review

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/lint"
)

// Comparison is a catalogue compared with its base: both sides, and how to show a position of
// either to a reader.
type Comparison struct {
	Base, Head lint.Side
	// Label names the base for a reader: "HEAD~1" or the directory.
	Label string
	// basePos and headPos show a position of each side as a path from where meshc was run; the
	// base's files are not in the working tree, so they read as REF:path, which `git show` opens.
	basePos, headPos func(catalogue.Pos) catalogue.Pos
}

// Load loads the base of the catalogue in dir at ref: a git commit, branch or tag of the
// repository dir is in, or a directory holding the base catalogue. head is the catalogue in dir
// as the caller already loaded and compiled it (lint and plan do so before they compare): loading
// it a second time here doubled the head's share of `--against` (BENCHMARKS.md). Any error means
// meshc could not run: a base that is not a catalogue, a ref git does not know.
func Load(dir, ref string, head lint.Side) (*Comparison, error) {
	c := &Comparison{Head: head, headPos: func(p catalogue.Pos) catalogue.Pos { return p.Under(dir) }}
	if st, err := os.Stat(ref); err == nil && st.IsDir() {
		c.Label = ref
		c.basePos = func(p catalogue.Pos) catalogue.Pos { return p.Under(ref) }
		c.Base, err = loadSide(ref)
		if err != nil {
			return nil, fmt.Errorf("the base catalogue in %s: %w", ref, err)
		}
		return c, nil
	}
	tmp, prefix, err := checkout(dir, ref)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	c.Label = ref
	c.basePos = func(p catalogue.Pos) catalogue.Pos {
		if p.File != "" {
			p.File = ref + ":" + prefix + p.File
		}
		return p
	}
	if c.Base, err = loadSide(tmp); err != nil {
		return nil, fmt.Errorf("the base catalogue at %s: %w", ref, err)
	}
	return c, nil
}

// loadSide loads and compiles one catalogue. Its findings are not this comparison's business:
// lint reports the head's, and a base was what it was.
func loadSide(dir string) (lint.Side, error) {
	c, _, err := catalogue.Load(dir)
	if err != nil {
		return lint.Side{}, err
	}
	ix := catalogue.NewIndex(c)
	p, _ := compiler.Compile(ix)
	return lint.Side{Index: ix, Plan: p}, nil
}

// checkout writes the catalogue as it is at ref into a new temporary directory, with git
// archive from the repository dir is in, and returns the directory and dir's path inside the
// repository ("" at its root, else ending in /).
func checkout(dir, ref string) (tmp, prefix string, err error) {
	if strings.HasPrefix(ref, "-") {
		return "", "", fmt.Errorf("--against %q: not a ref git reads, and no such directory", ref)
	}
	top, err := git(dir, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", "", fmt.Errorf("--against %s: %s is not in a git repository (%v); give the base as a directory instead", ref, dir, err)
	}
	prefix, err = git(dir, nil, "rev-parse", "--show-prefix")
	if err != nil {
		return "", "", fmt.Errorf("--against %s: %v", ref, err)
	}
	if _, err := git(top, nil, "rev-parse", "--verify", "--quiet", ref+"^{commit}"); err != nil {
		return "", "", fmt.Errorf("--against %s: git knows no commit by that name in %s", ref, top)
	}
	var archive bytes.Buffer
	if _, err := git(top, &archive, "archive", "--format=tar", ref+":"+prefix); err != nil {
		return "", "", fmt.Errorf("--against %s: %s has no catalogue at %s (%v)", ref, ref, orElse(prefix, "the repository's root"), err)
	}
	tmp, err = os.MkdirTemp("", "meshc-base-")
	if err != nil {
		return "", "", err
	}
	if err := untar(&archive, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", "", fmt.Errorf("--against %s: %w", ref, err)
	}
	return tmp, prefix, nil
}

func orElse(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// git runs git in dir; its output goes to out when given, else it is returned trimmed.
func git(dir string, out io.Writer, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if out != nil {
		cmd.Stdout = out
	}
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return "", errors.New(msg)
		}
		return "", err
	}
	return strings.TrimSpace(stdout.String()), nil
}

// untar writes a git archive's regular files and directories under dir; a name that would
// leave dir is refused.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading git archive: %w", err)
		}
		name := filepath.FromSlash(strings.TrimSuffix(h.Name, "/"))
		if name == "" || name == "." {
			continue
		}
		if !filepath.IsLocal(name) {
			return fmt.Errorf("git archive holds %q, outside the catalogue", h.Name)
		}
		p := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.Create(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}
