package filter

// ValueAt exposes valueAt to the external tests, so that they read Arrow
// values the way the evaluator does.
var ValueAt = valueAt
