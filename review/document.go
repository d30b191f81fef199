package review

import (
	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
)

// Document is the review as JSON: the change set's document (change.Document) with the review's
// keys after its own — "review" (the counts every format's summary lines say), "reads", "users",
// "accounts", "breaks" and "unmatched_approvals". The shape only ever gains fields, and every
// list is an array, never null.
type Document struct {
	change.Document
	Review    Counts                   `json:"review"`
	Reads     []compiler.ReadChange    `json:"reads"`
	Users     []compiler.UserChange    `json:"users"`
	Accounts  []compiler.AccountChange `json:"accounts"`
	Keys      []compiler.KeyChange     `json:"keys"`
	Breaks    []Break                  `json:"breaks"`
	Unmatched catalogue.Findings       `json:"unmatched_approvals"`
}

// Break is one break in the document: at its reported severity (info once approved), with its
// message as the rule says it and the approval beside it.
type Break struct {
	Rule     string              `json:"rule"`
	Severity catalogue.Severity  `json:"severity"`
	Pos      catalogue.Pos       `json:"pos"`
	On       string              `json:"on"`
	From     string              `json:"from,omitempty"`
	To       string              `json:"to,omitempty"`
	Message  string              `json:"message"`
	Related  []catalogue.Related `json:"related,omitempty"`
	Approved *Approved           `json:"approved,omitempty"`
}

// Approved is where a break was approved, and why.
type Approved struct {
	Pos    catalogue.Pos `json:"pos"`
	Reason string        `json:"reason"`
}

// Document is the review as its JSON document.
func (r Review) Document() Document {
	d := Document{
		Document:  r.Changes.Document(),
		Review:    r.Count(),
		Reads:     orEmpty(r.Reads),
		Users:     orEmpty(r.Users),
		Accounts:  orEmpty(r.Accounts),
		Keys:      orEmpty(r.Keys),
		Breaks:    []Break{},
		Unmatched: orEmpty(r.Unmatched),
	}
	for i := range d.Users {
		d.Users[i].Gained = orEmpty(d.Users[i].Gained)
		d.Users[i].Lost = orEmpty(d.Users[i].Lost)
	}
	for _, x := range r.Breaks {
		b := Break{Rule: x.Rule, Severity: x.ReportedSeverity(), Pos: x.Pos, On: x.On, From: x.From, To: x.To, Message: x.Message, Related: x.Related}
		if x.Approval != nil {
			b.Approved = &Approved{Pos: x.Approval.Pos, Reason: x.Approval.Reason.Value}
		}
		d.Breaks = append(d.Breaks, b)
	}
	return d
}

// orEmpty is a copy of s that is never nil: JSON's [] rather than null.
func orEmpty[S ~[]E, E any](s S) S {
	return append(S{}, s...)
}
