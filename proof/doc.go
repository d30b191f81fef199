// Package proof holds the claims meshc makes about the buses it configures, proven on real
// nats-servers in the test process: every grant works for its holder and nothing it derives can
// be used against another principal, in both isolations. It has no code of its own outside its
// tests, as benchmarks/ has none: a bus is started the way `meshc up` starts one (package up), as
// the users meshc composed, so what the proof proves is what up runs. Each try a principal makes
// is package principal's, which `meshc verify` makes too: the command judges a team's bus by the
// same rules this proof judges meshc's fixtures.
package proof
