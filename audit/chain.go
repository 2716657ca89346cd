package audit

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"unicode/utf8"
)

// The hash chain (D1): every event a store appends carries PrevHash, the Hash of the event
// before it in its tenant's chain (Genesis for a tenant's first), and Hash, its own:
//
//	Hash = SHA-256(PrevHash || ID as 8 bytes big-endian || SHA-256(Content(e)))
//
// where Content is the canonical encoding of every field but the two hashes (see Content).
// A tenant's chain runs in ID order: a store links an event only while it holds the tenant's
// chain head, and takes the ID under it. So changing a field breaks the event's Hash,
// removing an event breaks the next one's PrevHash, and moving an event (a changed ID)
// breaks its Hash, whichever store wrote them and whatever was exported.

// HashSize is the size of a chain hash: SHA-256.
const HashSize = sha256.Size

// Genesis is the PrevHash of a tenant's first chained event: 32 zero bytes.
var Genesis [HashSize]byte

// contentVersion opens the content encoding, so that a later encoding can never collide with
// this one.
const contentVersion = "warden.audit.v1\x00"

// Content is the canonical encoding of e without its hashes, the bytes whose SHA-256 the chain
// links. It is total and unambiguous: the fields in a fixed order, each string as its length
// (4 bytes big-endian) then its bytes, each list as its length then its items:
//
//	"warden.audit.v1\x00"
//	time: Unix seconds (8 bytes, two's complement), nanoseconds (4 bytes)
//	kind, call, tenant, session, principal, role, profile, run, tool, digest, decision
//	blockers: count (4 bytes), each code, rule, detail, count (8 bytes)
//	rules: count, each rule
//	approver, channel, harness
//	spend: 0, or 1 then connector, unit, amount (IEEE 754 bits, 8 bytes)
//	outcome, error, policy
//
// A nil and an empty list encode alike (JSON omits both), and a byte that is not valid UTF-8
// encodes as U+FFFD (as JSON carries it), so an event hashes the same in a store and in an
// export. The ID is not part of the content: the link adds it.
func Content(e *Event) []byte { return appendContent(nil, e) }

// appendContent appends Content(e) to b.
func appendContent(b []byte, e *Event) []byte {
	b = append(b, contentVersion...)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Time.Unix()))
	b = binary.BigEndian.AppendUint32(b, uint32(e.Time.Nanosecond()))
	for _, s := range []string{e.Kind, e.CallID, e.Tenant, e.Session, e.Principal, e.Role, e.Profile,
		e.Run, e.Tool, e.Digest, e.Decision} {
		b = appendString(b, s)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(e.Blockers)))
	for _, bl := range e.Blockers {
		b = appendString(appendString(appendString(b, bl.Code), bl.Rule), bl.Detail)
		b = binary.BigEndian.AppendUint64(b, uint64(int64(bl.Count)))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(e.Rules)))
	for _, r := range e.Rules {
		b = appendString(b, r)
	}
	b = appendString(appendString(appendString(b, e.Approver), e.Channel), e.Harness)
	if e.Spend == nil {
		b = append(b, 0)
	} else {
		b = appendString(appendString(append(b, 1), e.Spend.Connector), e.Spend.Unit)
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(e.Spend.Amount))
	}
	return appendString(appendString(appendString(b, e.Outcome), e.Error), e.PolicyRevision)
}

// appendString appends s, length first, with each byte that is not valid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		fixed := make([]byte, 0, len(s)+8)
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			fixed = utf8.AppendRune(fixed, r) // an invalid byte decodes as RuneError, n == 1
			i += n
		}
		s = string(fixed)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// ContentHash is SHA-256(Content(e)).
func ContentHash(e *Event) [HashSize]byte {
	var buf [1024]byte // most events fit: no allocation
	return sha256.Sum256(appendContent(buf[:0], e))
}

// Link is the hash of the event with id and content hash content that follows prev in its
// tenant's chain: SHA-256(prev || id (8 bytes big-endian) || content).
func Link(prev [HashSize]byte, id int64, content [HashSize]byte) [HashSize]byte {
	var buf [2*HashSize + 8]byte
	copy(buf[:], prev[:])
	binary.BigEndian.PutUint64(buf[HashSize:], uint64(id))
	copy(buf[HashSize+8:], content[:])
	return sha256.Sum256(buf[:])
}

// Seal sets e's PrevHash and Hash for its place after prev, once its ID is set, and returns
// its Hash.
func (e *Event) Seal(prev [HashSize]byte) [HashSize]byte {
	return e.SealContent(prev, ContentHash(e))
}

// SealContent is Seal with e's ContentHash computed already (a store computes it before it
// takes its chain's lock; only the link needs the lock).
func (e *Event) SealContent(prev, content [HashSize]byte) [HashSize]byte {
	h := Link(prev, e.ID, content)
	var buf [4 * HashSize]byte
	hex.Encode(buf[:2*HashSize], prev[:])
	hex.Encode(buf[2*HashSize:], h[:])
	both := string(buf[:]) // one allocation for the two
	e.PrevHash, e.Hash = both[:2*HashSize], both[2*HashSize:]
	return h
}

// ParseHash reads a hash as events carry it: 64 hexadecimal digits.
func ParseHash(s string) ([HashSize]byte, error) {
	var h [HashSize]byte
	if len(s) != 2*HashSize {
		return h, fmt.Errorf("hash %q: want %d hexadecimal digits", s, 2*HashSize)
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("hash %q: %w", s, err)
	}
	return h, nil
}

// HashBytes is the hash in b (as a store keeps it, 32 bytes) as events carry it: hexadecimal;
// "" for none (an event appended before the chain existed).
func HashBytes(b []byte) string {
	if b == nil {
		return ""
	}
	return hex.EncodeToString(b)
}
