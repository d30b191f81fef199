package catalogue

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"time"
)

// durationPart is one number and its unit; a duration is one or more written together (1w2d).
var (
	durationPart  = regexp.MustCompile(`(\d+(?:\.\d+)?)([a-zA-Z]+)`)
	durationWhole = regexp.MustCompile(`^(?:\d+(?:\.\d+)?[a-zA-Z]+)+$`)
)

// longUnits are the units the NATS CLI adds to Go's (ns us ms s m h), with its lengths: a day
// of 24 hours, a week of 7 days, a month (M) of 30 days, a year of 365 days — no calendar.
var longUnits = map[string]time.Duration{
	"d": 24 * time.Hour, "D": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "W": 7 * 24 * time.Hour,
	"M": 30 * 24 * time.Hour,
	"y": 365 * 24 * time.Hour, "Y": 365 * 24 * time.Hour,
}

// ParseDuration reads a duration the way the NATS CLI does (jsm.go's ParseDuration, which
// `nats stream add --max-age 7d` uses), so a value copied from an operator's command line means
// the same in mesh.yaml. It is written out here rather than imported: jsm.go would bring
// prometheus, expr and a non-no-op antithesis SDK into the build for a table of five units.
// Unlike jsm.go it refuses text between the parts ("1d junk2h") and a sign.
func ParseDuration(s string) (time.Duration, error) {
	if !durationWhole.MatchString(s) {
		return 0, errors.New("not a duration")
	}
	var total time.Duration
	for _, p := range durationPart.FindAllStringSubmatch(s, -1) {
		var d time.Duration
		if unit, ok := longUnits[p[2]]; ok {
			v, err := strconv.ParseFloat(p[1], 64)
			if err != nil {
				return 0, err
			}
			ns := v * float64(unit)
			if ns >= float64(math.MaxInt64) {
				return 0, errors.New("too long")
			}
			d = time.Duration(ns)
		} else {
			var err error
			if d, err = time.ParseDuration(p[0]); err != nil {
				return 0, err
			}
		}
		if total += d; total < 0 {
			return 0, errors.New("too long")
		}
	}
	return total, nil
}
