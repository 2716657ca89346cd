package manage

import (
	"errors"
	"fmt"
)

// The rules of a Store's revisions, shared by the SQLite and PostgreSQL stores so that both
// answer a write or a deletion alike (store/storetest checks both).

// ObjectName names an object in messages: "profile writer".
func ObjectName(kind Kind, id string) string { return string(kind) + " " + id }

// CheckObject refuses an object the store cannot key.
func CheckObject(o *Object) error {
	switch {
	case o.Kind == "":
		return errors.New("the object has no kind")
	case o.ID == "":
		return fmt.Errorf("the %s has no id", o.Kind)
	case o.Tenant == "":
		return fmt.Errorf("%s has no tenant", ObjectName(o.Kind, o.ID))
	}
	return nil
}

// CheckWrite is the ErrStale of a write of an object of tenant, if ifRevision is not
// its current revision or the object lives in another tenant, or nil. cur is the row's
// revision (0: none), and a deleted row's current revision is 0. A deleted object may be
// created again in another tenant: nothing of it is left to move.
func CheckWrite(cur int64, was string, deleted bool, tenant string, ifRevision int64) error {
	live := cur > 0 && !deleted
	current := cur
	if !live {
		current = 0
	}
	if ifRevision != AnyRevision && ifRevision != current {
		switch {
		case live:
			return fmt.Errorf("it is at revision %d, not %d: %w", cur, ifRevision, ErrStale)
		case cur > 0:
			return fmt.Errorf("it was deleted at revision %d (create it with revision 0): %w", cur, ErrStale)
		default:
			return fmt.Errorf("it does not exist (create it with revision 0), not revision %d: %w", ifRevision, ErrStale)
		}
	}
	if live && was != tenant {
		return fmt.Errorf("it belongs to tenant %s and may not move to tenant %s: %w", was, tenant, ErrStale)
	}
	return nil
}

// CheckDelete is the error of a deletion of an object at revision cur (0: none) when the
// caller named ifRevision, or nil.
func CheckDelete(cur int64, deleted bool, ifRevision int64) error {
	if cur == 0 || deleted {
		return ErrNotFound
	}
	if ifRevision != AnyRevision && ifRevision != cur {
		return fmt.Errorf("it is at revision %d, not %d: %w", cur, ifRevision, ErrStale)
	}
	return nil
}
