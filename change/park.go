package change

import (
	"encoding/json"

	"github.com/nats-io/nats.go/jetstream"
)

// ParkedKey is the metadata key of a stream whose subjects apply moved aside before deleting it
// (so the stream takes no message between the check that it is empty and the delete): its value
// is the subjects the stream had, as JSON, so a stream parked by an apply that stopped is given
// them back.
const ParkedKey = "meshc.parked"

// ParkedSubject is where a parked stream's subjects go: a subject of its own that nothing
// publishes to, so the stream takes no message while it is checked and deleted.
func ParkedSubject(stream string) string { return "meshc.parked." + stream }

// ParkedSubjects returns the subjects a parked stream had, and whether it is parked.
func ParkedSubjects(cfg jetstream.StreamConfig) ([]string, bool) {
	v, ok := cfg.Metadata[ParkedKey]
	if !ok {
		return nil, false
	}
	var subjects []string
	if json.Unmarshal([]byte(v), &subjects) != nil {
		return nil, true
	}
	return subjects, true
}

// Parked is cfg parked: its subjects moved aside and the ones it had recorded. A stream parked
// already keeps the subjects first recorded.
func Parked(cfg jetstream.StreamConfig) jetstream.StreamConfig {
	md := make(map[string]string, len(cfg.Metadata)+1)
	for k, v := range cfg.Metadata {
		md[k] = v
	}
	if _, parked := md[ParkedKey]; !parked {
		data, _ := json.Marshal(cfg.Subjects)
		md[ParkedKey] = string(data)
	}
	cfg.Metadata = md
	cfg.Subjects = []string{ParkedSubject(cfg.Name)}
	return cfg
}

// Unparked is cfg with the subjects it had before it was parked, and the record gone.
func Unparked(cfg jetstream.StreamConfig) jetstream.StreamConfig {
	subjects, parked := ParkedSubjects(cfg)
	if !parked {
		return cfg
	}
	md := make(map[string]string, len(cfg.Metadata))
	for k, v := range cfg.Metadata {
		if k != ParkedKey {
			md[k] = v
		}
	}
	cfg.Metadata = md
	if len(subjects) > 0 {
		cfg.Subjects = subjects
	}
	return cfg
}
