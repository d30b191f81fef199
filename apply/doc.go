// Package apply reconciles a live bus with a plan in the order that loses nothing
// (docs/commands.md, "Plans and a live bus: `meshc plan`, `meshc apply`, `meshc up`"): every
// refusal decided before anything is written, then the lock, the users and accounts (package
// deliver), the streams and consumers — a replace that delivers nothing acknowledged again, a
// stream parked before its delete — and removed accounts last. Connecting and reading are
// package wire's; what differs is package change's, purely.
package apply
