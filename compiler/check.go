package compiler

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// Check makes sure the plan means to the server what it says, and puts it in its order: streams
// by name, consumers by stream then name. It refuses what the server would read wider than the
// plan means, or could not read at all: an account name the config format cannot write, a user
// with no name or two users of one name, a permission with no allow list that does not deny
// everything (to the server an empty allow list means every subject: docs/nats.md, "An empty allow
// list means everything"), two streams of one name, two consumers of one name on one stream, a
// consumer on a stream the plan does not have.
//
// Compile checks the plan it derives; a plan made any other way (read back from plan.json, made
// by hand in a test) is checked on its first use. emit and apply trust a checked plan, and never
// sort or check it again. A checked plan changed afterwards must be checked again.
func (p *Plan) Check() error {
	p.checked = false
	var errs []error
	seen := make(map[string]bool, len(p.Users))
	for _, u := range p.Users {
		if u.Name == "" {
			errs = append(errs, errors.New("a user with no name: every bus user needs a username"))
			continue
		}
		if seen[u.Name] {
			// The server refuses the file too (`Duplicate user "u" detected`), but only when it
			// loads it, on the broker: refusing here fails `meshc emit`, before anything ships.
			errs = append(errs, fmt.Errorf("user %s appears twice: one username belongs to one holder; rename one of its declarations", strconv.Quote(u.Name)))
		}
		seen[u.Name] = true
		// Only the errors: two nils per user grew a list as long as the plan's users.
		for _, err := range [...]error{checkPermission(u.Name, "publish", u.Publish), checkPermission(u.Name, "subscribe", u.Subscribe)} {
			if err != nil {
				errs = append(errs, err)
			}
		}
	}

	slices.SortStableFunc(p.Streams, func(a, b Stream) int { return cmp.Compare(a.Config.Name, b.Config.Name) })
	sortConsumers(p.Consumers)
	streams := make(map[string]bool, len(p.Streams))
	for i, s := range p.Streams {
		streams[s.Config.Name] = true
		if i > 0 && s.Config.Name == p.Streams[i-1].Config.Name {
			errs = append(errs, fmt.Errorf("two streams named %q in the plan: one name is one stream", s.Config.Name))
		}
	}
	for i, c := range p.Consumers {
		name := ConsumerName(c.Config)
		if !streams[c.Stream] {
			errs = append(errs, fmt.Errorf("consumer %s is on stream %s, which the plan does not list", name, c.Stream))
		}
		if i > 0 && c.Stream == p.Consumers[i-1].Stream && name == ConsumerName(p.Consumers[i-1].Config) {
			errs = append(errs, fmt.Errorf("two consumers named %q on stream %q in the plan: each needs its own durable name", name, c.Stream))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	p.checked = true
	return nil
}

// sortConsumers orders consumers by stream then name, keeping the order of equals. A consumer's
// configuration is hundreds of bytes: the sort moves indices, and each consumer moves once.
func sortConsumers(cs []Consumer) {
	type key struct{ stream, name string }
	keys := make([]key, len(cs))
	for i, c := range cs {
		keys[i] = key{c.Stream, ConsumerName(c.Config)}
	}
	compare := func(a, b key) int { return cmp.Or(cmp.Compare(a.stream, b.stream), cmp.Compare(a.name, b.name)) }
	if slices.IsSortedFunc(keys, compare) {
		return
	}
	order := make([]int, len(cs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return compare(keys[a], keys[b]) })
	// Put each in place by following the permutation's cycles: position i takes order[i].
	for i := range order {
		if order[i] == i || order[i] < 0 {
			continue
		}
		first := cs[i]
		j := i
		for order[j] != i {
			next := order[j]
			cs[j] = cs[next]
			order[j] = -1
			j = next
		}
		cs[j] = first
		order[j] = -1
	}
}

// Checked reports whether the plan was checked (and not found wanting) since it was made.
func (p *Plan) Checked() bool { return p.checked }

// checkPermission refuses a permission the server would read as more than the plan says: a
// permission without an allow list is only safe when its deny list holds `>`, the compiler's
// "nothing".
func checkPermission(user, dir string, perm Permission) error {
	if len(perm.Allow) > 0 || slices.Contains(perm.Deny, ">") {
		return nil
	}
	what := "nothing at all"
	if len(perm.Deny) > 0 {
		what = "only a deny list"
	}
	return fmt.Errorf("user %s: %s permission has %s, which the server reads as every subject but those denied; "+
		"refusing to widen it (a user with nothing to %s is written deny [\">\"])",
		strconv.Quote(user), dir, what, dir)
}
