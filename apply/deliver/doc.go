// Package deliver delivers a plan's users and accounts, one Delivery for both auth modes: what
// the bus holds of them read back, the accounts file written where the server reads it and
// reloaded until the server is proven to serve it, or in operator mode each account JWT pushed
// to the resolver, proven by a probe, and removed only revoked first and only where no stream
// lives; what was delivered recorded in apply's bucket. The change model says what differs;
// apply's Run says when (after every refusal, under the lock).
package deliver
