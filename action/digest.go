package action

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"math"
	"slices"
	"sync"
	"unsafe"
)

// Digest is the canonical digest of a call: its tool and its arguments. Equal calls have equal
// digests whatever the order of their keys; approvals and review tokens are bound to it.
//
// The arguments are encoded with a type tag before each value and a length before each string,
// so no two different calls encode alike. Values of types a JSON decoder does not produce are
// encoded with their Go syntax (%#v), tagged apart from the rest.
func Digest(tool string, args map[string]any) string {
	h := hashPool.Get().(hash.Hash)
	h.Reset()
	d := digester{h: h}
	d.str(tool)
	d.value(args)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	hashPool.Put(h)
	return hex.EncodeToString(sum[:])
}

var hashPool = sync.Pool{New: func() any { return sha256.New() }}

type digester struct {
	h   hash.Hash
	buf [9]byte
}

func (d *digester) tag(t byte, n uint64) {
	d.buf[0] = t
	binary.BigEndian.PutUint64(d.buf[1:], n)
	d.h.Write(d.buf[:])
}

func (d *digester) str(s string) {
	d.tag('s', uint64(len(s)))
	// The hash reads the bytes and keeps none of them: no copy is needed.
	d.h.Write(unsafe.Slice(unsafe.StringData(s), len(s)))
}

func (d *digester) value(v any) {
	switch x := v.(type) {
	case nil:
		d.tag('n', 0)
	case bool:
		if x {
			d.tag('b', 1)
		} else {
			d.tag('b', 0)
		}
	case string:
		d.str(x)
	case float64:
		d.tag('f', math.Float64bits(x))
	case int:
		d.tag('f', math.Float64bits(float64(x)))
	case int64:
		d.tag('f', math.Float64bits(float64(x)))
	case json.Number:
		d.tag('N', uint64(len(x)))
		d.h.Write([]byte(x))
	case []any:
		d.tag('l', uint64(len(x)))
		for _, e := range x {
			d.value(e)
		}
	case map[string]any:
		d.tag('m', uint64(len(x)))
		var small [16]string
		keys := small[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			d.str(k)
			d.value(x[k])
		}
	default:
		s := fmt.Sprintf("%#v", x)
		d.tag('g', uint64(len(s)))
		d.h.Write([]byte(s))
	}
}
