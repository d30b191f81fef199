package change

// ParkedKey is the metadata key of a stream whose subjects apply moved aside before deleting it
// (so the stream takes no message between the check that it is empty and the delete): its value
// is the subjects the stream had, as JSON, so a stream parked by an apply that stopped is given
// them back.
const ParkedKey = "meshc.parked"
