package main

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

	"github.com/meshc-dev/meshc/apply"
	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/lint"
)

// againstHelp is the --against flag of plan and lint.
const againstHelp = `  --against REF    compare with the base: the catalogue at REF, a git commit, branch or tag
                   read with git from the catalogue's own repository (HEAD~1, origin/main),
                   or a directory holding the base catalogue`

// change is a catalogue compared with its base: both sides, and how to show a position of
// either to a reader.
type change struct {
	base, head lint.Side
	// label names the base for a reader: "HEAD~1" or the directory.
	label string
	// basePos and headPos show a position of each side as a path from where meshc was run; the
	// base's files are not in the working tree, so they read as REF:path, which `git show` opens.
	basePos, headPos func(catalogue.Pos) catalogue.Pos
}

// loadChange loads the catalogue in dir and its base at ref. Any error means meshc could not
// run: a base that is not a catalogue, a ref git does not know.
func loadChange(dir, ref string) (*change, error) {
	head, err := loadSide(dir)
	if err != nil {
		return nil, err
	}
	c := &change{head: head, headPos: func(p catalogue.Pos) catalogue.Pos { return rebase(dir, p) }}
	if st, err := os.Stat(ref); err == nil && st.IsDir() {
		c.label = ref
		c.basePos = func(p catalogue.Pos) catalogue.Pos { return rebase(ref, p) }
		c.base, err = loadSide(ref)
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
	c.label = ref
	c.basePos = func(p catalogue.Pos) catalogue.Pos {
		if p.File != "" {
			p.File = ref + ":" + prefix + p.File
		}
		return p
	}
	if c.base, err = loadSide(tmp); err != nil {
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
		return "", "", fmt.Errorf("--against %s: %s has no catalogue at %s (%v)", ref, ref, cmp(prefix, "the repository's root"), err)
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

func cmp(s, orElse string) string {
	if s == "" {
		return orElse
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

// breaks is what the change breaks, positions shown from here. The streams the server cannot
// change in place come from apply's own diff: its replace table is the one that decides.
func (c *change) breaks() []lint.Break {
	cs := apply.Diff(apply.Applied(c.base.Plan), c.head.Plan, apply.DiffOptions{})
	replaced := map[string]string{}
	for _, ch := range cs.Items {
		if ch.Kind != apply.KindStream || ch.Action != apply.Replace {
			continue
		}
		var fields []string
		for _, f := range ch.Fields {
			if f.Replaces {
				fields = append(fields, f.Name)
			}
		}
		replaced[ch.Stream] = strings.Join(fields, ", ")
	}
	bs := lint.Breaks(lint.Against{Base: c.base, Head: c.head, BasePos: c.basePos, Replaced: replaced})
	for i := range bs {
		bs[i].Pos = c.headPos(bs[i].Pos)
		if a := bs[i].Approval; a != nil {
			shown := *a
			shown.Pos = c.headPos(a.Pos)
			bs[i].Approval = &shown
		}
	}
	return bs
}

// users is every user the change adds, removes or changes, each grant's declaration shown from
// here: a gain's in the head, a loss's in the base.
func (c *change) users() []compiler.UserChange {
	ucs := compiler.CompareUsers(c.base.Plan, c.head.Plan)
	for i := range ucs {
		for j := range ucs[i].Gained {
			ucs[i].Gained[j].Because = shownGrants(ucs[i].Gained[j].Because, c.headPos)
		}
		for j := range ucs[i].Lost {
			ucs[i].Lost[j].Because = shownGrants(ucs[i].Lost[j].Because, c.basePos)
		}
	}
	return ucs
}

func shownGrants(gs []compiler.Grant, pos func(catalogue.Pos) catalogue.Pos) []compiler.Grant {
	out := make([]compiler.Grant, len(gs))
	for i, g := range gs {
		g.Source = pos(g.Source)
		out[i] = g
	}
	return out
}

// rebase shows a position relative to the catalogue as a path from where meshc was run.
func rebase(dir string, p catalogue.Pos) catalogue.Pos {
	if p.File != "" && filepath.Clean(dir) != "." {
		p.File = filepath.ToSlash(filepath.Join(dir, filepath.FromSlash(p.File)))
	}
	return p
}
