package catalogue

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// The field tables below are the catalogue format of SPEC §1: a key not in a table is an
// unknown key, with the nearest one as a hint.

func (d *decoder) module(doc *yaml.Node, m *Module) {
	seen := d.mapping(doc, "a module manifest", map[string]field{
		"module":      func(_, v *yaml.Node) { m.Name, _ = d.text(v, "module") },
		"description": func(_, v *yaml.Node) { m.Description, _ = d.text(v, "description") },
		"provides":    func(_, v *yaml.Node) { m.Provides = d.texts(v, "provides") },
		"requires":    func(_, v *yaml.Node) { m.Requires = d.texts(v, "requires") },
		"emits":       func(_, v *yaml.Node) { m.Emits = d.texts(v, "emits") },
		"consumes":    func(_, v *yaml.Node) { m.Consumes = d.texts(v, "consumes") },
		"tools":       func(_, v *yaml.Node) { m.Tools = d.texts(v, "tools") },
		"calls":       func(_, v *yaml.Node) { m.Calls = d.texts(v, "calls") },
		"claims":      func(_, v *yaml.Node) { m.Claims = d.texts(v, "claims") },
		"uses":        func(_, v *yaml.Node) { m.Uses = d.texts(v, "uses") },
		"seats": func(_, v *yaml.Node) {
			d.list(v, "seats", func(item *yaml.Node) {
				s := &Seat{Declarer: m}
				if d.seat(item, "a seat", s) {
					m.Seats = append(m.Seats, s)
				}
			})
		},
		"files": func(_, v *yaml.Node) { m.Files = d.files(v) },
	})
	if seen["module"] == nil && d.resolve(doc).Kind == yaml.MappingNode {
		d.failFile("this manifest names no module: add `module: <name>` (lower-case letters, digits and -)")
	}
}

// seat decodes one seat, declared by a module or as a role in mesh.yaml. It reports whether the
// seat had a name, because a nameless seat can be referred to by nothing.
func (d *decoder) seat(n *yaml.Node, what string, s *Seat) bool {
	named := false
	seen := d.mapping(n, what, map[string]field{
		"name":     func(_, v *yaml.Node) { s.Name, named = d.text(v, "a seat's name") },
		"scope":    func(_, v *yaml.Node) { s.Scope, _ = d.text(v, "a seat's scope") },
		"delivers": func(_, v *yaml.Node) { s.Delivers, _ = d.text(v, "delivers") },
		"accepts":  func(_, v *yaml.Node) { s.Accepts = d.texts(v, "accepts") },
		"emits":    func(_, v *yaml.Node) { s.Emits = d.texts(v, "a seat's emits") },
	})
	if !named {
		if r := d.resolve(n); r.Kind == yaml.MappingNode && seen["name"] == nil {
			d.fail(r, "%s needs a name: add `name: <seat>`", what)
		}
	}
	if named && seen["scope"] == nil {
		*d.findings = append(*d.findings, RuleYAML.At(s.Name.Pos,
			"seat %q has no scope: add `scope: mesh` (one holder in the mesh) or `scope: node` (one per machine)", Excerpt(s.Name.Value)))
	}
	return named
}

func (d *decoder) files(n *yaml.Node) []FileRequest {
	var out []FileRequest
	// Which kinds of file exist is a fact about the mesh, so the key is any word here and
	// checked by lint; only the shape is the loader's.
	n = d.resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, "files must be a mapping of file kinds to paths, not %s", describe(n))
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, ok := d.text(n.Content[i], "a file kind")
		if !ok {
			continue
		}
		if p, ok := d.text(n.Content[i+1], "the path of "+Excerpt(k.Value)); ok {
			out = append(out, FileRequest{Kind: k, Path: p})
		}
	}
	return out
}

func (d *decoder) mesh(doc *yaml.Node, m *Mesh) {
	seen := d.mapping(doc, "mesh.yaml", map[string]field{
		"name": func(_, v *yaml.Node) { m.Name, _ = d.text(v, "name") },
		"roles": func(_, v *yaml.Node) {
			d.list(v, "roles", func(item *yaml.Node) {
				s := &Seat{}
				if d.seat(item, "a role", s) {
					m.Roles = append(m.Roles, s)
				}
			})
		},
		"controller": func(_, v *yaml.Node) {
			d.mapping(v, "controller", map[string]field{
				"submits": func(_, v *yaml.Node) { m.Controller.Submits = d.texts(v, "submits") },
				"follows": func(_, v *yaml.Node) { m.Controller.Follows = d.texts(v, "follows") },
			})
		},
		"aliases": func(_, v *yaml.Node) {
			v = d.resolve(v)
			if isNull(v) {
				return
			}
			if v.Kind != yaml.MappingNode {
				d.fail(v, "aliases must be a mapping of old seat names to new ones, not %s", describe(v))
				return
			}
			for i := 0; i+1 < len(v.Content); i += 2 {
				old, ok1 := d.text(v.Content[i], "an old seat name")
				renamed, ok2 := d.text(v.Content[i+1], "the new name of "+old.Value)
				if ok1 && ok2 {
					m.Aliases = append(m.Aliases, Alias{Old: old, New: renamed})
				}
			}
		},
		"shared-names": func(_, v *yaml.Node) { m.SharedNames = d.texts(v, "shared-names") },
		"approve": func(_, v *yaml.Node) {
			d.list(v, "approve", func(item *yaml.Node) {
				a := Approval{Pos: d.pos(item)}
				seen := d.mapping(item, "an approval", map[string]field{
					"rule":   func(_, v *yaml.Node) { a.Rule, _ = d.text(v, "an approval's rule") },
					"on":     func(_, v *yaml.Node) { a.On, _ = d.text(v, "what an approval is on") },
					"reason": func(_, v *yaml.Node) { a.Reason, _ = d.text(v, "an approval's reason") },
				})
				if d.resolve(item).Kind != yaml.MappingNode {
					return
				}
				for _, k := range []string{"rule", "on", "reason"} {
					if seen[k] == nil {
						d.fail(item, "an approval needs %s: write `{rule: replay|retention|widening|contract, on: <what breaks>, reason: <why it is wanted>}`", k)
						return
					}
				}
				m.Approvals = append(m.Approvals, a)
			})
		},
		"isolation": func(_, v *yaml.Node) {
			m.Isolation = d.oneOf(v, "isolation", IsolationShared, IsolationPerModule)
		},
		"auth": func(_, v *yaml.Node) { m.Auth = d.oneOf(v, "auth", AuthPassword, AuthNKey) },
		"streams": func(_, v *yaml.Node) {
			d.mapping(v, "streams", map[string]field{
				"events":  func(k, v *yaml.Node) { d.streamSettings(k, v, "streams.events", &m.Streams.Events) },
				"control": func(k, v *yaml.Node) { d.streamSettings(k, v, "streams.control", &m.Streams.Control) },
				"nodes":   func(k, v *yaml.Node) { d.streamSettings(k, v, "streams.nodes", &m.Streams.Nodes) },
				"seats":   func(k, v *yaml.Node) { d.streamSettings(k, v, "streams.seats", &m.Streams.Seats) },
			})
		},
	})
	if seen["name"] == nil && d.resolve(doc).Kind == yaml.MappingNode {
		d.failFile("mesh.yaml names no mesh: add `name: <mesh>`; it becomes the NATS account its users live in")
	}
}

// oneOf decodes a string that must be one of a few words; anything else is refused naming them.
func (d *decoder) oneOf(n *yaml.Node, what string, words ...string) Text {
	t, ok := d.text(n, what)
	if !ok {
		return Text{}
	}
	for _, w := range words {
		if t.Value == w {
			return t
		}
	}
	d.fail(n, "%s must be %s, not %q", what, strings.Join(words, " or "), t.Value)
	return Text{}
}

func (d *decoder) streamSettings(key, n *yaml.Node, what string, s *StreamSettings) {
	s.Pos = d.pos(key)
	d.mapping(n, what, map[string]field{
		"replicas":             func(_, v *yaml.Node) { s.Replicas = int(d.integer(v, what+".replicas", 1)) },
		"max-age":              func(_, v *yaml.Node) { s.MaxAge = d.duration(v, what+".max-age") },
		"max-bytes":            func(_, v *yaml.Node) { s.MaxBytes = d.integer(v, what+".max-bytes", 1) },
		"max-msgs-per-subject": func(_, v *yaml.Node) { s.MaxMsgsPerSubject = d.integer(v, what+".max-msgs-per-subject", 1) },
		"storage":              func(_, v *yaml.Node) { s.Storage, _ = d.text(v, what+".storage") },
		"ack-wait":             func(_, v *yaml.Node) { s.AckWait = d.duration(v, what+".ack-wait") },
	})
	if s.Replicas > 5 {
		d.fail(n, "%s.replicas is %d; JetStream allows at most 5", what, s.Replicas)
		s.Replicas = 0
	}
	if v := s.Storage.Value; v != "" && v != "file" && v != "memory" {
		d.fail(n, "%s.storage must be file or memory, not %q", what, Excerpt(v))
		s.Storage = Text{}
	}
}

func (d *decoder) inventory(doc *yaml.Node, inv *Inventory) {
	d.mapping(doc, "inventory.yaml", map[string]field{
		"nodes": func(_, v *yaml.Node) {
			d.list(v, "nodes", func(item *yaml.Node) {
				node := &Node{}
				named := false
				d.mapping(item, "a node", map[string]field{
					"name":      func(_, v *yaml.Node) { node.Name, named = d.text(v, "a node's name") },
					"runs":      func(_, v *yaml.Node) { node.Runs = d.texts(v, "runs") },
					"enrolling": func(_, v *yaml.Node) { node.Enrolling = d.boolean(v, "enrolling") },
				})
				if named {
					inv.Nodes = append(inv.Nodes, node)
				} else if r := d.resolve(item); r.Kind == yaml.MappingNode {
					d.fail(r, "a node needs a name: add `name: <machine>`")
				}
			})
		},
		"people": func(_, v *yaml.Node) {
			d.list(v, "people", func(item *yaml.Node) {
				p := &Person{}
				named := false
				d.mapping(item, "a person", map[string]field{
					"name":     func(_, v *yaml.Node) { p.Name, named = d.text(v, "a person's name") },
					"may-call": func(_, v *yaml.Node) { p.MayCall = d.texts(v, "may-call") },
				})
				if named {
					inv.People = append(inv.People, p)
				} else if r := d.resolve(item); r.Kind == yaml.MappingNode {
					d.fail(r, "a person needs a name: add `name: <person>`")
				}
			})
		},
	})
}

func (d *decoder) credentials(doc *yaml.Node, c *Credentials) {
	doc = d.resolve(doc)
	if isNull(doc) {
		return
	}
	if doc.Kind != yaml.MappingNode {
		d.fail(doc, "credentials.yaml must be a flat mapping of usernames to bcrypt hashes, not %s", describe(doc))
		return
	}
	// `meshc mint` edits this file line by line (CredentialsEdit) and refuses what it cannot edit
	// faithfully; said here too, so lint reports it before anyone needs to mint.
	const unmintable = "; meshc mint edits credentials.yaml line by line and refuses this: write one `user: \"hash\"` per line"
	if doc.Style&yaml.FlowStyle != 0 {
		d.fail(doc, "credentials.yaml is written as a flow mapping ({...})%s", unmintable)
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if k, v := doc.Content[i], doc.Content[i+1]; k.Anchor != "" || v.Anchor != "" || k.Kind == yaml.AliasNode || v.Kind == yaml.AliasNode {
			d.fail(k, "an anchor or alias (&name, *name) in credentials.yaml%s", unmintable)
		} else if v.Kind == yaml.ScalarNode && v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			d.fail(v, "a hash written over several lines (| or >)%s", unmintable)
		}
		user, ok := d.text(doc.Content[i], "a username")
		if !ok {
			continue
		}
		hash, ok := d.text(doc.Content[i+1], "the hash of "+user.Value)
		if !ok {
			continue
		}
		if first, dup := c.Hashes[user.Value]; dup {
			d.fail(doc.Content[i], "%s has two recorded hashes (the first at line %d); keep the newer one",
				user.Value, first.Pos.Line)
			continue
		}
		c.Hashes[user.Value] = hash
		c.Users = append(c.Users, user)
	}
}
