package suggest

import "testing"

func TestClosest(t *testing.T) {
	keys := []string{"claims", "consumes", "emits", "provides", "requires", "roles", "uses"}
	for word, want := range map[string]string{
		"rolse":    "roles", // a swap is one slip
		"consume":  "consumes",
		"claim":    "claims",
		"emit":     "emits",
		"provide":  "provides",
		"xyz":      "", // nothing close: no hint rather than a wild one
		"roles":    "", // the word itself is not a suggestion
		"deliver":  "",
		"requries": "requires",
	} {
		if got := Closest(word, keys); got != want {
			t.Errorf("Closest(%q) = %q, want %q", word, got, want)
		}
	}
}
