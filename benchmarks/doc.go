// Package benchmarks holds meshc's benchmarks, each beside its floor: the least work that could
// do the same job (decoding the same YAML with yaml.v3 alone, creating the same objects with raw
// concurrent JetStream calls, listing them with the paged list API). Run in one process, meshc
// and its floor share the machine's noise, so their ratio holds where an absolute time does not.
//
// The package has no code of its own: its benchmarks are in _test.go files, and BENCHMARKS.md at
// the top of the module records how to run them and what one run measured.
//
// Benchmarks never become timed tests: CI runs them with -benchtime=1x (one iteration, to prove
// they still run and the paths they time are clean), or not at all. The pipeline, memory and
// --against benchmarks run at 100,000 modules only with MESHC_BENCH_FULL=1 in the environment:
// writing and loading a catalogue of 100,000 files takes minutes, which CI does not spend.
package benchmarks
