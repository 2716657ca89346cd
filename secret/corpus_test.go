package secret_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// The clean corpora: realistic tool output that holds no protected value. Redaction must leave
// each of them exactly as it is (no false positive), and its throughput is measured on them.
// Every corpus is generated from a fixed seed, so that figures compare across runs and commits.

const (
	upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lower  = "abcdefghijklmnopqrstuvwxyz"
	digits = "0123456789"
	alnum  = upper + lower + digits
	hexLow = "0123456789abcdef"
)

func randFrom(rng *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

func randUUID(rng *rand.Rand) string {
	h := randFrom(rng, hexLow, 32)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

var proseWords = strings.Fields(`the of and to in is that for it as was with be by on not he this are or
his from at which but have an had they you were their one all we can her has there been if more when
will would who so no out up into do than time two about other could some only new these its may them
people then like first any over such our man me even most made after also did many before must
through back years where much your way well down should because each just those how too little state
good very make world still own see men work long get here between both life being under never day
same another know while last might us great old year off come since against go came right used take
three system question government development information program problem service report result
request response server client network address memory process thread value function method package
module interface structure database record failed success warning error message channel buffer
however although therefore meanwhile instead otherwise nevertheless furthermore consequently`)

// prose is English text in sentences and paragraphs.
func prose(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		words := 6 + rng.IntN(18)
		for i := range words {
			w := proseWords[rng.IntN(len(proseWords))]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			b.WriteString(w)
			switch {
			case i == words-1:
				b.WriteString([]string{". ", ". ", "? ", "! "}[rng.IntN(4)])
			case rng.IntN(9) == 0:
				b.WriteString(", ")
			default:
				b.WriteByte(' ')
			}
		}
		if rng.IntN(5) == 0 {
			b.WriteString("\n\n")
		}
	}
	return b.String()[:n]
}

var identParts = strings.Fields(`get set new make read write open close parse load save find match
value values key keys name names path paths file files buf buffer err ctx req res resp client server
session token handle index count size len start end next prev node tree list map item items entry
config options state status result results event events store cache policy rule rules check`)

func ident(rng *rand.Rand, exported bool) string {
	n := 1 + rng.IntN(3)
	var b strings.Builder
	for i := range n {
		p := identParts[rng.IntN(len(identParts))]
		if i > 0 || exported {
			p = strings.ToUpper(p[:1]) + p[1:]
		}
		b.WriteString(p)
	}
	return b.String()
}

// sourceCode is Go-like source: functions, comments, literals, indentation.
func sourceCode(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "// %s %s.\n", ident(rng, true), prose(rng, 40+rng.IntN(60)))
		fmt.Fprintf(&b, "func (%s *%s) %s(ctx context.Context, %s string, %s int) (*%s, error) {\n",
			ident(rng, false)[:1], ident(rng, true), ident(rng, true), ident(rng, false), ident(rng, false), ident(rng, true))
		for range 3 + rng.IntN(8) {
			depth := 1 + rng.IntN(3)
			ind := strings.Repeat("\t", depth)
			switch rng.IntN(6) {
			case 0:
				fmt.Fprintf(&b, "%sif err := %s.%s(%s); err != nil {\n%s\treturn nil, fmt.Errorf(\"%s: %%w\", err)\n%s}\n",
					ind, ident(rng, false), ident(rng, true), ident(rng, false), ind, strings.ToLower(ident(rng, false)), ind)
			case 1:
				fmt.Fprintf(&b, "%s%s := make(map[string]%s, %d)\n", ind, ident(rng, false), ident(rng, true), rng.IntN(64))
			case 2:
				fmt.Fprintf(&b, "%sfor i := 0; i < len(%s); i++ {\n%s\t%s[i] = 0x%02x\n%s}\n", ind, ident(rng, false), ind, ident(rng, false), rng.IntN(256), ind)
			case 3:
				fmt.Fprintf(&b, "%s%s.%s = %q\n", ind, ident(rng, false), ident(rng, true), strings.ToLower(ident(rng, true))+"/"+ident(rng, false))
			case 4:
				fmt.Fprintf(&b, "%s// %s\n", ind, prose(rng, 30+rng.IntN(50)))
			default:
				fmt.Fprintf(&b, "%sreturn &%s{%s: %s, %s: %d}, nil\n", ind, ident(rng, true), ident(rng, true), ident(rng, false), ident(rng, true), rng.IntN(100000))
			}
		}
		b.WriteString("}\n\n")
	}
	return b.String()[:n]
}

// jsonDocs is API output: records with ids, UUIDs, timestamps, URLs, numbers, nested objects,
// and strings with escapes.
func jsonDocs(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		rec := map[string]any{
			"id":         rng.IntN(1 << 30),
			"uuid":       randUUID(rng),
			"name":       ident(rng, false),
			"created_at": fmt.Sprintf("2026-%02d-%02dT%02d:%02d:%02d.%03dZ", 1+rng.IntN(12), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1000)),
			"url":        fmt.Sprintf("https://api.example.com/v2/%s/%d?page=%d&per_page=50", strings.ToLower(ident(rng, false)), rng.IntN(99999), rng.IntN(20)),
			"size":       rng.Float64() * 1e6,
			"active":     rng.IntN(2) == 0,
			"tags":       []string{ident(rng, false), ident(rng, false)},
			"owner":      map[string]any{"login": ident(rng, false), "id": rng.IntN(1e7), "type": "User"},
			"body":       prose(rng, 60+rng.IntN(120)) + "\n\n\"" + ident(rng, false) + "\" café <b>",
			"etag":       `W/"` + randFrom(rng, hexLow, 32) + `"`,
		}
		var out []byte
		if rng.IntN(2) == 0 {
			out, _ = json.MarshalIndent(rec, "", "  ")
		} else {
			out, _ = json.Marshal(rec)
		}
		b.Write(out)
		b.WriteString(",\n")
	}
	return b.String()[:n]
}

// logs are service logs: timestamps, levels, request ids in hex, UUIDs, trace ids, paths,
// durations, IP addresses.
func logs(rng *rand.Rand, n int) string {
	var b strings.Builder
	levels := []string{"INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"}
	for b.Len() < n {
		fmt.Fprintf(&b, "2026-%02d-%02dT%02d:%02d:%02d.%06dZ %-5s [%s] req=%s trace=%s span=%s path=/api/v1/%s/%d status=%d dur=%.3fms ip=10.%d.%d.%d msg=%q\n",
			1+rng.IntN(12), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1e6),
			levels[rng.IntN(len(levels))], randUUID(rng), randFrom(rng, hexLow, 16), randFrom(rng, hexLow, 32), randFrom(rng, hexLow, 16),
			strings.ToLower(ident(rng, false)), rng.IntN(1e6), []int{200, 200, 201, 204, 400, 404, 500}[rng.IntN(7)],
			rng.Float64()*900, rng.IntN(256), rng.IntN(256), rng.IntN(256), prose(rng, 20+rng.IntN(40)))
	}
	return b.String()[:n]
}

// gitLog is `git log --stat` output: commit SHAs, authors, dates, messages, file stats, and
// abbreviated SHAs in index lines.
func gitLog(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "commit %s\nMerge: %s %s\nAuthor: %s <%s@example.com>\nDate:   Mon Nov %d %02d:%02d:%02d 2026 +0100\n\n    %s\n\n",
			randFrom(rng, hexLow, 40), randFrom(rng, hexLow, 7), randFrom(rng, hexLow, 7), ident(rng, true), strings.ToLower(ident(rng, false)),
			1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60), prose(rng, 30+rng.IntN(50)))
		for range 1 + rng.IntN(4) {
			fmt.Fprintf(&b, " %s/%s.go | %d %s\n", strings.ToLower(ident(rng, false)), strings.ToLower(ident(rng, false)), rng.IntN(200), strings.Repeat("+", rng.IntN(30)))
		}
		fmt.Fprintf(&b, "index %s..%s 100644\nparent %s\ntree %s\n\n", randFrom(rng, hexLow, 12), randFrom(rng, hexLow, 12), randFrom(rng, hexLow, 40), randFrom(rng, hexLow, 40))
	}
	return b.String()[:n]
}

// base64Blobs are encoded payloads: random binary, and encoded text (a manifest's secret
// data, a JWT payload), some wrapped at 76 columns as MIME does.
func base64Blobs(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		var payload []byte
		if rng.IntN(2) == 0 {
			payload = make([]byte, 200+rng.IntN(2000))
			for i := range payload {
				payload[i] = byte(rng.UintN(256))
			}
		} else {
			payload = []byte(jsonDocs(rng, 200+rng.IntN(800)))
		}
		enc := base64.StdEncoding.EncodeToString(payload)
		if rng.IntN(3) == 0 {
			enc = base64.RawURLEncoding.EncodeToString(payload)
		}
		if rng.IntN(2) == 0 {
			for len(enc) > 76 {
				b.WriteString(enc[:76])
				b.WriteByte('\n')
				enc = enc[76:]
			}
		}
		fmt.Fprintf(&b, "data: %s\n\n", enc)
	}
	return b.String()[:n]
}

// corpora are the clean corpora, 1 MiB each unless n says otherwise, and "mixed": all of them
// interleaved in pieces, as a session's results come.
func corpora(n int) map[string]string {
	rng := rand.New(rand.NewPCG(11, 11))
	out := map[string]string{
		"prose":  prose(rng, n),
		"code":   sourceCode(rng, n),
		"json":   jsonDocs(rng, n),
		"logs":   logs(rng, n),
		"gitlog": gitLog(rng, n),
		"base64": base64Blobs(rng, n),
	}
	var mixed strings.Builder
	names := []string{"prose", "code", "json", "logs", "gitlog", "base64"}
	for mixed.Len() < n {
		name := names[rng.IntN(len(names))]
		c := out[name]
		at := rng.IntN(len(c) - 4096)
		mixed.WriteString(c[at : at+512+rng.IntN(3584)])
	}
	out["mixed"] = mixed.String()[:n]
	return out
}

// realisticValues are n secrets of the kinds Warden protects, 20 to 64 characters: API keys
// with a vendor prefix, JWT-like tokens, AWS-like key pairs, base64 and hex keys, passwords.
func realisticValues(n int) []string {
	rng := rand.New(rand.NewPCG(13, 13))
	b64 := func(nbytes int) string {
		raw := make([]byte, nbytes)
		for i := range raw {
			raw[i] = byte(rng.UintN(256))
		}
		return base64.StdEncoding.EncodeToString(raw)
	}
	out := make([]string, 0, n)
	for len(out) < n {
		var v string
		switch len(out) % 8 {
		case 0:
			v = "ghp_" + randFrom(rng, alnum, 36)
		case 1:
			v = "sk-" + randFrom(rng, alnum, 20+rng.IntN(28))
		case 2:
			v = "xoxb-" + randFrom(rng, digits, 12) + "-" + randFrom(rng, alnum, 24)
		case 3:
			v = "AKIA" + randFrom(rng, upper+digits, 16)
		case 4:
			// JWT-like: a header and payload in base64url and a short signature
			v = "eyJ" + randFrom(rng, alnum+"-_", 17) + "." + "eyJ" + randFrom(rng, alnum+"-_", 20) + "." + randFrom(rng, alnum+"-_", 10)
		case 5:
			v = b64(18 + rng.IntN(27))
		case 6:
			raw := make([]byte, 16+rng.IntN(16))
			for i := range raw {
				raw[i] = byte(rng.UintN(256))
			}
			v = hex.EncodeToString(raw)
		default:
			v = randFrom(rng, alnum+"!#$%&*+-=?@^_~", 20+rng.IntN(12))
		}
		if len(v) > 64 {
			v = v[:64]
		}
		out = append(out, v)
	}
	return out
}
