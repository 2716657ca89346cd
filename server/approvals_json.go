package server

import "github.com/wardenhq/warden/approval"

// ApprovalsJSON is a list of cards as GET /api/v1/approvals shows it ({"approvals": [...]}),
// for printing them in the same shape elsewhere (warden approvals list --json).
func ApprovalsJSON(cards []*approval.Card) any {
	out := make([]cardJSON, len(cards))
	for i, c := range cards {
		out[i] = toCardJSON(c)
	}
	return map[string]any{"approvals": out}
}
