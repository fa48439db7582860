package deployid

import (
	"os"
	"sort"
	"strings"
)

// Env is the operator's environment as FromKubeVirt reads it. It is a seam so
// tests and the CLI can supply or override variables without touching the process.
type Env interface {
	// Lookup returns the variable's value and whether it is set.
	Lookup(name string) (string, bool)
	// Environ returns every variable as NAME=VALUE.
	Environ() []string
}

// OSEnv reads the process environment.
type OSEnv struct{}

// Lookup implements Env.
func (OSEnv) Lookup(name string) (string, bool) { return os.LookupEnv(name) }

// Environ implements Env.
func (OSEnv) Environ() []string { return os.Environ() }

// MapEnv is an in-memory environment.
type MapEnv map[string]string

// Lookup implements Env.
func (m MapEnv) Lookup(name string) (string, bool) {
	v, ok := m[name]
	return v, ok
}

// Environ implements Env; the result is sorted so callers are deterministic.
func (m MapEnv) Environ() []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// EnvFromList builds a MapEnv from NAME=VALUE entries (as os.Environ returns them).
// The value is everything after the first '=', so it may itself contain '='. Later
// entries win, which lets callers append overrides. Entries without '=' are ignored,
// as the OS would never produce them.
func EnvFromList(entries []string) MapEnv {
	m := make(MapEnv, len(entries))
	for _, e := range entries {
		if name, value, ok := strings.Cut(e, "="); ok {
			m[name] = value
		}
	}
	return m
}

// lookupNonEmpty treats a variable set to "" as unset: an empty image or version
// is never a meaningful override.
func lookupNonEmpty(env Env, name string) (string, bool) {
	v, ok := env.Lookup(name)
	return v, ok && v != ""
}
