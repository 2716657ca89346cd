package audit

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"
)

// Checkpoint is an instance's signed statement that a tenant's chain reached an event with a
// hash: once a verifier holds it, the events up to it cannot be removed or changed, the last
// ones included, without the signature or the chain failing.
type Checkpoint struct {
	Tenant string `json:"tenant"`
	// Event is the ID of the chain's last event at the checkpoint, Hash its Hash.
	Event int64     `json:"event"`
	Hash  string    `json:"hash"`
	Time  time.Time `json:"time"`
	// Key is the signer's Ed25519 public key (base64, standard encoding), as the store's
	// list of keys records it; Signature the signature of SignedBytes (base64).
	Key       string `json:"key"`
	Signature string `json:"signature"`
}

// SignedBytes are the bytes a checkpoint's signature covers: "warden.audit.checkpoint.v1\x00",
// the tenant (length-prefixed as in Content), the event ID (8 bytes big-endian), the hash
// (32 bytes), the time (Unix seconds, 8 bytes; nanoseconds, 4 bytes).
func (c *Checkpoint) SignedBytes() ([]byte, error) {
	h, err := ParseHash(c.Hash)
	if err != nil {
		return nil, err
	}
	b := append([]byte(nil), "warden.audit.checkpoint.v1\x00"...)
	b = appendString(b, c.Tenant)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Event))
	b = append(b, h[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Time.Unix()))
	return binary.BigEndian.AppendUint32(b, uint32(c.Time.Nanosecond())), nil
}

// Sign sets c's Key and Signature with priv.
func (c *Checkpoint) Sign(priv ed25519.PrivateKey) error {
	msg, err := c.SignedBytes()
	if err != nil {
		return err
	}
	c.Key = base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))
	c.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(priv, msg))
	return nil
}

// Check verifies c's signature with its Key.
func (c *Checkpoint) Check() error {
	pub, err := base64.StdEncoding.DecodeString(c.Key)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("key %q: want an Ed25519 public key in base64", c.Key)
	}
	sig, err := base64.StdEncoding.DecodeString(c.Signature)
	if err != nil {
		return fmt.Errorf("signature: not base64: %w", err)
	}
	msg, err := c.SignedBytes()
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, msg, sig) {
		return fmt.Errorf("the signature does not hold for key %s", c.Key)
	}
	return nil
}

// Key is a public key an instance signs checkpoints with, as the store records it.
type Key struct {
	// Key is the Ed25519 public key, base64 (standard encoding).
	Key string `json:"key"`
	// Instance is the instance that holds the private key (in its memory only).
	Instance string    `json:"instance"`
	Created  time.Time `json:"created"`
}

// Checkpointer is implemented by logs that keep signed checkpoints and the keys that sign
// them.
type Checkpointer interface {
	// AddKey records a public key; recording it twice is harmless.
	AddKey(ctx context.Context, k Key) error
	// Keys lists the recorded keys, oldest first.
	Keys(ctx context.Context) ([]Key, error)
	// AddCheckpoint records a signed checkpoint.
	AddCheckpoint(ctx context.Context, c Checkpoint) error
	// Checkpoints lists the recorded checkpoints in the order they were recorded.
	Checkpoints(ctx context.Context) ([]Checkpoint, error)
}

// AddCheckpoint gives v a checkpoint to check against the chain, before the events are read:
// its signature must hold with a key in keys (public keys in base64; nil: any key), and its
// event must be in the trail with its hash.
func (v *Verifier) AddCheckpoint(c Checkpoint, keys map[string]bool) {
	if v.bad != nil {
		return
	}
	fail := func(format string, args ...any) {
		v.bad = &ChainError{ID: c.Event, Tenant: c.Tenant, Reason: ReasonCheckpoint, Detail: fmt.Sprintf(format, args...)}
	}
	if keys != nil && !keys[c.Key] {
		fail("the checkpoint of %s is signed with key %s, which no instance recorded", c.Time.Format(time.RFC3339), c.Key)
		return
	}
	if err := c.Check(); err != nil {
		fail("the checkpoint of %s: %v", c.Time.Format(time.RFC3339), err)
		return
	}
	v.checkpoints[c.Event] = append(v.checkpoints[c.Event], c)
}

// checkpointsAt checks the checkpoints of e, a chained event that matched its chain.
func (v *Verifier) checkpointsAt(e *Event) {
	cps := v.checkpoints[e.ID]
	if cps == nil {
		return
	}
	delete(v.checkpoints, e.ID)
	for _, c := range cps {
		if c.Tenant != e.Tenant || c.Hash != e.Hash {
			v.bad = &ChainError{ID: e.ID, Tenant: e.Tenant, Reason: ReasonCheckpoint,
				Detail: fmt.Sprintf("a checkpoint signed for tenant %q and hash %s does not match it", c.Tenant, c.Hash)}
			return
		}
		v.sum.Checkpoints++
	}
}

// unmatchedCheckpoint is an error for the first checkpoint whose event was not read.
func (v *Verifier) unmatchedCheckpoint() error {
	var first *Checkpoint
	for id, cps := range v.checkpoints {
		if first == nil || id < first.Event {
			first = &cps[0]
		}
	}
	if first == nil {
		return nil
	}
	return &ChainError{ID: first.Event, Tenant: first.Tenant, Reason: ReasonCheckpoint,
		Detail: fmt.Sprintf("a checkpoint of %s names it, but it is not in the trail: events were removed",
			first.Time.Format(time.RFC3339))}
}

// HashHex is h in hexadecimal, as events carry it.
func HashHex(h [HashSize]byte) string { return hex.EncodeToString(h[:]) }
