package v1

// TimePattern is the pattern of every timestamp (metav1.Time) of the
// KubeVirt CRD, on top of its format date-time. The format alone, as the API
// server checks it, accepts strings metav1.Time cannot decode: a lowercase t
// or z ("2026-12-02t12:00:00z"), any character before the fraction
// ("12:00:00x5Z"), offsets beyond 23:59. One such status write made every
// list of KubeVirts fail to decode in the operator, which then reconciled
// nothing. The pattern keeps what Go's time.RFC3339 parses (with at most 9
// fraction digits and the offsets of RFC 3339): the format checks the day of
// the month and the time's ranges. Each metav1.Time field of the API carries
// it as a marker (test-checked against the generated CRD), after markers
// repeating its type and format: controller-gen applies a pattern only to a
// field it knows to be a string. The operator's own writes (RFC 3339 in UTC,
// seconds) match it.
const TimePattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
