// Package wire is the live bus as apply's jobs meet it: connecting as the NATS CLI does (and
// refusing a server older than meshc takes), reading what the bus holds into the change model's
// State, counting what a change would drop, the requests' retries on what is transient, and
// apply's bucket on the bus — the lock that keeps one apply at a time, its fence, and the
// records of what was delivered. It decides nothing about a change: package change does, purely;
// package apply reconciles, and package deliver delivers the users and accounts.
package wire
