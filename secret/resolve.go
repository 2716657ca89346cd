package secret

import (
	"errors"
	"sort"
)

// Resolve turns protectedBindings (environment variable name → handle) into values for one
// process's environment (P2). Every binding must be valid: a name that is not an environment
// variable name ([A-Za-z_][A-Za-z0-9_]*), a handle this registry does not hold, a handle of
// another registry, and a managed reference (ErrManagedHandle: only ResolveManaged, which
// checks the reference's scope, lifetime and authorisation, may resolve one; this is the
// synchronous resolver, and like BURROW's it refuses them) are each a *BindingError naming
// the binding. All of them are reported, joined, in name order, and then no value is given.
func (r *Registry) Resolve(bindings map[string]string) (map[string]Secret, error) {
	names := make([]string, 0, len(bindings))
	for name := range bindings {
		names = append(names, name)
	}
	sort.Strings(names)

	r.st.mu.Lock()
	out := make(map[string]Secret, len(bindings))
	var bad []*BindingError
	for _, name := range names {
		h := bindings[name]
		err := error(nil)
		if !validEnvName(name) {
			err = ErrInvalidName
		} else if e, lerr := r.lookup(h); lerr != nil {
			err = lerr
		} else if e.managed != nil {
			err = ErrManagedHandle
		} else {
			out[name] = e.value
		}
		if err != nil {
			bad = append(bad, &BindingError{Name: name, Handle: h, Err: err})
		}
	}
	r.st.mu.Unlock()

	if len(bad) > 0 {
		errs := make([]error, len(bad))
		for i, be := range bad {
			be.Name, be.Handle = r.Redact(be.Name), r.Redact(be.Handle)
			errs[i] = be
		}
		if len(errs) == 1 {
			return nil, errs[0]
		}
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// validEnvName reports whether name is a portable environment variable name.
func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
