// Package examples holds the example catalogue in mesh/, the one a new user reads to learn the
// format, and the tests that keep it loading, linting clean and showing every part of the format
// it is there to teach.
package examples
