package wire

import (
	"strings"
	"testing"
)

func TestTheOldestServerIsTwoTen(t *testing.T) {
	t.Parallel()
	for version, refused := range map[string]bool{
		"2.9.25": true, "2.9.10": true, "1.4.1": true, "v2.9.0": true,
		"2.10.0": false, "2.10.29": false, "2.11.0-RC.1": false, "2.15.2": false, "3.0.0": false,
		// A server that names no version it can read is not one meshc knows to be old.
		"": false, "dev": false,
	} {
		err := CheckServerVersion("nats://bus:4222", version)
		if (err != nil) != refused {
			t.Errorf("nats-server %q: refused %v, want %v (%v)", version, err != nil, refused, err)
		}
		if err != nil && !strings.Contains(err.Error(), "runs nats-server "+version+", and meshc needs 2.10.0 or later") {
			t.Errorf("the refusal does not name the version and the minimum: %v", err)
		}
	}
}

func TestServerVersionsCompareByRelease(t *testing.T) {
	t.Parallel()
	v, ok := ParseServerVersion("2.11.0-RC.1")
	if !ok || v != (ServerVersion{2, 11, 0}) || !v.AtLeast(PauseServerVersion) {
		t.Fatalf("2.11.0-RC.1 read as %v %v", v, ok)
	}
	for _, c := range []struct {
		a, b ServerVersion
		want bool
	}{
		{ServerVersion{2, 10, 29}, ServerVersion{2, 11, 0}, false},
		{ServerVersion{2, 11, 0}, ServerVersion{2, 10, 29}, true},
		{ServerVersion{3, 0, 0}, ServerVersion{2, 99, 99}, true},
		{ServerVersion{2, 10, 1}, ServerVersion{2, 10, 1}, true},
		{ServerVersion{2, 10, 0}, ServerVersion{2, 10, 1}, false},
	} {
		if got := c.a.AtLeast(c.b); got != c.want {
			t.Errorf("%v at least %v: %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
