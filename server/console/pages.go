package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wardenhq/warden/audit"
)

func (c *Console) routes() {
	c.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		s, ok := c.current(w, r)
		if !ok {
			return
		}
		if s == nil {
			http.Redirect(w, r, "/signin", http.StatusSeeOther)
			return
		}
		http.Redirect(w, r, "/inbox", http.StatusSeeOther)
	})
	c.mux.HandleFunc("GET /signin", c.signinPage)
	c.mux.HandleFunc("POST /signin", c.signin)
	c.mux.HandleFunc("POST /signout", c.post(c.signout))
	c.mux.HandleFunc("GET /inbox", c.get(c.inbox))
	c.mux.HandleFunc("POST /inbox/{id}", c.post(c.answer))
	c.mux.HandleFunc("GET "+EventsPath, c.get(c.events))
	c.mux.HandleFunc("GET /surface", c.get(c.surface))
	c.mux.HandleFunc("GET /audit", c.get(c.audit))
	c.mux.HandleFunc("GET /try", c.get(c.tryPage))
	c.mux.HandleFunc("POST /try", c.post(c.try))
	c.mux.HandleFunc("GET /connections", c.get(c.list("connections")))
	c.mux.HandleFunc("GET /profiles", c.get(c.list("profiles")))
	for _, e := range []struct{ path, kind string }{
		{"/boundaries", "boundaries"}, {"/egress", "egress"},
		{"/connections/{id}", "connection"}, {"/profiles/{id}", "profile"}, {"/profiles/{id}/grant", "grant"},
	} {
		c.mux.HandleFunc("GET "+e.path, c.get(c.editPage(e.kind)))
		c.mux.HandleFunc("POST "+e.path, c.post(c.edit(e.kind)))
	}
	c.mux.HandleFunc("POST /connections/{id}/delete", c.post(c.remove("connection")))
	c.mux.HandleFunc("POST /profiles/{id}/delete", c.post(c.remove("profile")))
	c.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such page: "+r.URL.Path, http.StatusNotFound)
	})
}

type handler func(w http.ResponseWriter, r *http.Request, s *session)

// get serves a page to a signed-in person, and sends anyone else to sign in.
func (c *Console) get(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := c.current(w, r)
		if !ok {
			return
		}
		if s == nil {
			http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		h(w, r, s)
	}
}

// post serves a form of a signed-in person's page, checked against CSRF first.
func (c *Console) post(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := c.current(w, r)
		if !ok {
			return
		}
		if s == nil {
			http.Error(w, "forbidden: no console session (sign in again)", http.StatusForbidden)
			return
		}
		if !c.checkPost(w, r, s.csrf) {
			return
		}
		h(w, r, s)
	}
}

// newPage is the page of a session.
func newPage(s *session, r *http.Request, title, nav string) *page {
	p := &page{Title: title, Nav: nav, User: &sessionView{Name: s.name, Tenant: s.tenant, Role: s.role}, CSRF: s.csrf, Tenant: s.tenant}
	if t := r.FormValue("tenant"); t != "" {
		p.Tenant = t
	}
	return p
}

// ---- sign in and out

func (c *Console) signinPage(w http.ResponseWriter, r *http.Request) {
	tok := randomToken()
	setCookie(w, r, signinCookie, tok, 600)
	c.render(w, http.StatusOK, "signin", &page{Title: "Sign in", CSRF: tok, Data: map[string]string{"Next": safeNext(r.FormValue("next"))}})
}

// safeNext is a page of this console to go to after sign-in, never another site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/inbox"
	}
	return next
}

func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	ck, err := r.Cookie(signinCookie)
	if !sameOrigin(r) || err != nil {
		http.Error(w, "forbidden: the sign-in form was not sent from this console's page (reload it)", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<16)
	if !tokenEqual(r.PostFormValue("csrf"), ck.Value) {
		http.Error(w, "forbidden: the sign-in form's CSRF token is missing or wrong (reload the page)", http.StatusForbidden)
		return
	}
	secret := strings.TrimSpace(r.PostFormValue("token"))
	tenant := strings.TrimSpace(r.PostFormValue("tenant"))
	fail := func(msg string) {
		tok := randomToken()
		setCookie(w, r, signinCookie, tok, 600)
		c.render(w, http.StatusUnauthorized, "signin", &page{Title: "Sign in", CSRF: tok, Error: msg,
			Data: map[string]string{"Next": safeNext(r.PostFormValue("next")), "Tenant": tenant}})
	}
	if secret == "" {
		fail("paste an API token (warden token create --access viewer, approver, operator or admin)")
		return
	}
	// The API says what the token is: an agent's is for /mcp; a tenant's token shows its own
	// tenant, whatever the form says; an admin's the tenant the form names.
	res := c.call(r.Context(), &session{secret: secret}, "GET", "/api/v1/whoami", nil)
	var who struct{ ID, Access, Tenant, Name string }
	if res.Status != http.StatusOK || res.decode(&who) != nil {
		fail("that token cannot sign in: " + res.errorMessage())
		return
	}
	switch {
	case who.Access == "agent":
		fail("that is an agent's token, for /mcp only: sign in with an admin's, operator's, approver's or viewer's")
		return
	case who.Tenant != "":
		tenant = who.Tenant
	case tenant == "":
		tenant = "default"
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	if name == "" {
		name = who.Name
	}
	s, err := c.sessions.signIn(r.Context(), signedIn{secret: secret, tokenID: who.ID, name: name, tenant: tenant, role: who.Access})
	if err != nil {
		c.o.Logger.Error("console: sign in", "token", who.ID, "err", err)
		fail("the console could not start a session right now; try again")
		return
	}
	// A session kept in a store calls the API by the token's id: it must be the same token.
	if s.secret == "" {
		if res := c.call(r.Context(), s, "GET", "/api/v1/whoami", nil); res.Status != http.StatusOK || res.decode(&who) != nil || who.ID != s.tokenID {
			_ = c.sessions.end(r.Context(), s)
			fail("the console cannot act as that token by its id: " + res.errorMessage())
			return
		}
	}
	setCookie(w, r, signinCookie, "", -1)
	setCookie(w, r, CookieName, s.id, 0)
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

func (c *Console) signout(w http.ResponseWriter, r *http.Request, s *session) {
	if err := c.sessions.end(r.Context(), s); err != nil {
		c.o.Logger.Error("console: sign out", "err", err)
		http.Error(w, "the session could not be ended right now; sign out again", http.StatusServiceUnavailable)
		return
	}
	setCookie(w, r, CookieName, "", -1)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// ---- the approvals inbox

type cardView struct {
	ID, Tenant, Session, Tool, Digest, Reason, State string
	Args                                             string
	Created, Deadline                                time.Time
	Offers                                           []string
}

func (c *Console) inbox(w http.ResponseWriter, r *http.Request, s *session) {
	p := newPage(s, r, "Approvals", "inbox")
	p.Notice = r.FormValue("notice")
	c.fillInbox(r, s, p)
	c.render(w, http.StatusOK, "inbox", p)
}

func (c *Console) fillInbox(r *http.Request, s *session, p *page) {
	res := c.call(r.Context(), s, "GET", "/api/v1/approvals?state=pending", nil)
	var body struct {
		Approvals []struct {
			cardView
			Args json.RawMessage `json:"args"`
		} `json:"approvals"`
	}
	cards := []cardView{}
	if res.Status != http.StatusOK {
		p.Error = res.errorMessage()
	} else if err := res.decode(&body); err != nil {
		p.Error = "the approvals could not be read: " + err.Error()
	}
	for _, a := range body.Approvals {
		cv := a.cardView
		cv.Args = indentJSON(a.Args)
		cards = append(cards, cv)
	}
	p.Data = cards
}

func indentJSON(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

func (c *Console) answer(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	body, _ := json.Marshal(map[string]string{"answer": r.PostFormValue("answer"), "digest": r.PostFormValue("digest")})
	res := c.call(r.Context(), s, "POST", "/api/v1/approvals/"+url.PathEscape(id), body)
	if res.Status != http.StatusOK {
		p := newPage(s, r, "Approvals", "inbox")
		c.fillInbox(r, s, p)
		p.Error = "the answer was not recorded: " + res.errorMessage()
		c.render(w, res.Status, "inbox", p)
		return
	}
	var card struct{ Tool, Answer string }
	_ = res.decode(&card)
	http.Redirect(w, r, "/inbox?notice="+url.QueryEscape(fmt.Sprintf("%s: %s", card.Tool, card.Answer)), http.StatusSeeOther)
}

// events relays the API's event stream of cards to the inbox page's script.
func (c *Console) events(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := c.sessions.hold(r.Context(), s)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "/api/v1/approvals/events", http.NoBody)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.RequestURI = "/api/v1/approvals/events"
	c.o.API.ServeHTTP(w, s.as(req))
}

// ---- the surface explorer

func (c *Console) surface(w http.ResponseWriter, r *http.Request, s *session) {
	p := newPage(s, r, "Surface explorer", "surface")
	q := r.URL.Query()
	form := map[string]string{"Role": q.Get("role"), "Profile": q.Get("profile"), "Harness": q.Get("harness"),
		"Model": q.Get("model"), "Owner": q.Get("owner"), "Env": q.Get("env")}
	data := map[string]any{"Form": form}
	p.Data = data
	if q.Get("role") != "" {
		v := url.Values{"tenant": {p.Tenant}, "role": {q.Get("role")}}
		for _, k := range []string{"profile", "harness", "model"} {
			if q.Get(k) != "" {
				v.Set(k, q.Get(k))
			}
		}
		if q.Get("owner") == "on" {
			v.Set("owner", "true")
		}
		for _, line := range strings.Split(q.Get("env"), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				v.Add("env", line)
			}
		}
		res := c.call(r.Context(), s, "GET", "/api/v1/surface?"+v.Encode(), nil)
		var rep struct {
			Role, Tenant, Profile, Harness, Revision string
			Model, ReadOnlyRoute                     string
			Tools                                    []string
			Given, Absent                            []struct{ Tool, Filter, Reason string }
			Gates                                    []struct{ Tool, Decision, Code, Reason string }
			Switches                                 []string `json:"switchReports"`
		}
		if res.Status != http.StatusOK {
			p.Error = res.errorMessage()
		} else if err := res.decode(&rep); err != nil {
			p.Error = "the surface could not be read: " + err.Error()
		} else {
			data["Report"] = rep
		}
	}
	c.render(w, http.StatusOK, "surface", p)
}

// ---- the audit view

type auditEvent struct {
	ID                                               int64
	Time                                             time.Time
	Kind, Tenant, Session, Tool, Decision, Principal string
	Outcome, Approver, Profile                       string
	Rules                                            []string
	Blockers                                         []struct{ Code string }
	Spend                                            *struct {
		Connector string
		Amount    float64
		Unit      string
	}
}

func (c *Console) audit(w http.ResponseWriter, r *http.Request, s *session) {
	p := newPage(s, r, "Audit", "audit")
	q := r.URL.Query()
	v := url.Values{"limit": {"1000"}}
	form := map[string]string{}
	for _, k := range []string{"kind", "decision", "tool", "session", "since", "until"} {
		val := strings.TrimSpace(q.Get(k))
		form[k] = val
		if val == "" {
			continue
		}
		if k == "since" || k == "until" {
			t, err := parseWhen(val)
			if err != nil {
				p.Error = fmt.Sprintf("%s %q: %v", k, val, err)
				continue
			}
			val = t.UTC().Format(time.RFC3339)
		}
		v.Set(k, val)
	}
	if p.User != nil && q.Get("tenant") != "" {
		v.Set("tenant", p.Tenant)
	}
	data := map[string]any{"Form": form, "Kinds": []string{"", audit.KindDecision, audit.KindApproval, audit.KindOutcome,
		audit.KindRun, audit.KindEgress, audit.KindBoundaries}, "Decisions": []string{"", "allow", "ask", "deny"}}
	p.Data = data
	if p.Error == "" {
		res := c.call(r.Context(), s, "GET", "/api/v1/audit?"+v.Encode(), nil)
		var body struct{ Events []auditEvent }
		if res.Status != http.StatusOK {
			p.Error = res.errorMessage()
		} else if err := res.decode(&body); err != nil {
			p.Error = "the audit trail could not be read: " + err.Error()
		} else {
			slices.Reverse(body.Events) // newest first
			data["Events"] = body.Events
			data["DecisionChart"] = decisionChart(body.Events)
		}
	}
	res := c.call(r.Context(), s, "GET", "/api/v1/tenants/"+url.PathEscape(p.Tenant)+"/allowances", nil)
	if res.Status == http.StatusOK {
		data["SpendChart"] = spendChart(res.Body)
	} else {
		data["SpendNote"] = "spend against allowance is not shown: " + res.errorMessage()
	}
	c.render(w, http.StatusOK, "audit", p)
}

// parseWhen reads an RFC 3339 time, or the value of an <input type="datetime-local"> (UTC).
func parseWhen(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("want a time such as 2026-11-30T12:00:00Z")
}

// ---- try a call

func (c *Console) tryPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := newPage(s, r, "Try a call", "try")
	p.Data = map[string]any{"Form": map[string]string{"Input": "{}"}}
	c.render(w, http.StatusOK, "try", p)
}

func (c *Console) try(w http.ResponseWriter, r *http.Request, s *session) {
	p := newPage(s, r, "Try a call", "try")
	form := map[string]string{}
	for _, k := range []string{"tool", "input", "role", "profile"} {
		form[strings.ToUpper(k[:1])+k[1:]] = r.PostFormValue(k)
	}
	data := map[string]any{"Form": form}
	p.Data = data
	var input map[string]any
	if err := json.Unmarshal([]byte(form["Input"]), &input); err != nil || input == nil {
		p.Error = fmt.Sprintf("the input must be a JSON object of the call's arguments: %v", err)
		c.render(w, http.StatusUnprocessableEntity, "try", p)
		return
	}
	body, _ := json.Marshal(map[string]any{"tool": form["Tool"], "input": input, "tenant": p.Tenant,
		"role": form["Role"], "profile": form["Profile"]})
	res := c.call(r.Context(), s, "POST", "/api/v1/review", body)
	var v struct {
		Decision string
		Blockers []struct{ Code, Rule, Detail string }
		Rules    []string
		Effects  []struct {
			Op, Path  string
			Recursive bool
		}
		Argv [][]string
	}
	if res.Status != http.StatusOK {
		p.Error = res.errorMessage()
	} else if err := res.decode(&v); err != nil {
		p.Error = err.Error()
	} else {
		data["Verdict"] = v
	}
	c.render(w, http.StatusOK, "try", p)
}

// ---- lists and editors of the management plane

// item is an object of the management plane as the API shows it.
type item struct {
	Kind     string          `json:"kind"`
	ID       string          `json:"id"`
	Tenant   string          `json:"tenant"`
	Source   string          `json:"source"`
	Revision int64           `json:"revision"`
	By       string          `json:"updatedBy"`
	Updated  *time.Time      `json:"updated"`
	Data     json.RawMessage `json:"data"`
	Problem  string          `json:"problem"`
}

func (c *Console) list(kind string) handler {
	return func(w http.ResponseWriter, r *http.Request, s *session) {
		p := newPage(s, r, strings.ToUpper(kind[:1])+kind[1:], kind)
		v := url.Values{"limit": {"100"}}
		if a := r.FormValue("after"); a != "" {
			v.Set("after", a)
		}
		res := c.call(r.Context(), s, "GET", "/api/v1/tenants/"+url.PathEscape(p.Tenant)+"/"+kind+"?"+v.Encode(), nil)
		var body struct {
			Items []item `json:"items"`
			Next  string `json:"next"`
		}
		if res.Status != http.StatusOK {
			p.Error = res.errorMessage()
		} else if err := res.decode(&body); err != nil {
			p.Error = err.Error()
		}
		p.Data = map[string]any{"Kind": kind, "One": strings.TrimSuffix(kind, "s"), "Items": body.Items, "Next": body.Next}
		c.render(w, http.StatusOK, "list", p)
	}
}

// editor is what the JSON editor page edits.
type editor struct {
	Kind, Title, Help string
	// Path is the console page; API the API's route of the object.
	Path, API string
	ID        string
	New       bool
	Text      string
	ETag      string
	ReadOnly  string
	Problems  []problem
	Item      *item
	// Deletable objects get a delete button.
	Deletable bool
}

// problem is one problem the API found in a document, at a JSON pointer into it.
type problem struct {
	Field, Where, Message string
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// editorFor says what a kind of editor edits, for the request's tenant and id.
func editorFor(kind, tenant, id string) (*editor, error) {
	t := "/api/v1/tenants/" + url.PathEscape(tenant)
	q := "?tenant=" + url.QueryEscape(tenant)
	e := &editor{Kind: kind, ID: id}
	if kind == "connection" || kind == "profile" || kind == "grant" {
		if id != "new" && !idPattern.MatchString(id) {
			return nil, fmt.Errorf("%q is not an id", id)
		}
	}
	switch kind {
	case "boundaries":
		e.Title, e.Path, e.API = "Hard blocks of "+tenant, "/boundaries"+q, t+"/boundaries"
		e.Help = `BURROW's stored format: {"version":1,"hardBlocks":[{"id","enabled","type","pattern","match","operations","reason"}]}. The policy's own hard blocks always apply too.`
	case "egress":
		e.Title, e.Path, e.API = "Egress allowlist of "+tenant, "/egress"+q, t+"/egress"
		e.Help = `The hosts the sandbox of this tenant may reach besides the policy's: {"allow":["host","*.domain"]}.`
	case "connection":
		e.Title, e.Path, e.API = "Connection "+id, "/connections/"+url.PathEscape(id)+q, t+"/connections/"+url.PathEscape(id)
		e.Help, e.Deletable, e.New = "A connection as the policy file writes one under its tenant (credentials by reference only).", id != "new", id == "new"
	case "profile":
		e.Title, e.Path, e.API = "Profile "+id, "/profiles/"+url.PathEscape(id)+q, t+"/profiles/"+url.PathEscape(id)
		e.Help, e.Deletable, e.New = "A profile as the policy file writes one: role, tools, grant, limits.", id != "new", id == "new"
	case "grant":
		e.Title, e.Path, e.API = "Grant of profile "+id, "/profiles/"+url.PathEscape(id)+"/grant"+q, t+"/profiles/"+url.PathEscape(id)+"/grant"
		e.Help = `The grant of a stored profile: {"connectors":[...],"skills":[...],"allowance":{...}}.`
	default:
		return nil, fmt.Errorf("no editor of %s", kind)
	}
	if e.New {
		e.Title = "New " + kind
	}
	return e, nil
}

func (c *Console) editPage(kind string) handler {
	return func(w http.ResponseWriter, r *http.Request, s *session) {
		p := newPage(s, r, "", kind)
		e, err := editorFor(kind, p.Tenant, r.PathValue("id"))
		if err != nil {
			p.Error = err.Error()
			c.render(w, http.StatusNotFound, "edit", p)
			return
		}
		p.Title, p.Data = e.Title, e
		p.Notice = r.FormValue("notice")
		if e.New {
			e.Text, e.ETag = "{\n}", `"0"`
		} else if err := c.load(r, s, e); err != nil {
			p.Error = err.Error()
		}
		may := "edit-data"
		if kind == "boundaries" {
			may = "edit-boundaries"
		}
		if !p.User.May(may) && e.ReadOnly == "" {
			e.ReadOnly = "a " + s.role + "'s token may read this, not change it"
			e.Deletable = false
		}
		c.render(w, http.StatusOK, "edit", p)
	}
}

// load reads the document an editor edits, and its ETag.
func (c *Console) load(r *http.Request, s *session, e *editor) error {
	res := c.call(r.Context(), s, "GET", e.API, nil)
	if res.Status != http.StatusOK {
		return fmt.Errorf("%s", res.errorMessage())
	}
	e.ETag = res.Header.Get("ETag")
	var it item
	if json.Unmarshal(res.Body, &it) == nil && it.Kind != "" && it.Data != nil {
		e.Item = &it
		e.Text = indentJSON(it.Data)
		if it.Source == "policy" {
			e.ReadOnly = "declared in the policy file: change it there"
			e.Deletable = false
		}
		if e.ETag == "" && it.Revision > 0 {
			e.ETag = `"` + strconv.FormatInt(it.Revision, 10) + `"`
		}
		return nil
	}
	e.Text = indentJSON(res.Body)
	return nil
}

func (c *Console) edit(kind string) handler {
	return func(w http.ResponseWriter, r *http.Request, s *session) {
		p := newPage(s, r, "", kind)
		id := r.PathValue("id")
		if id == "new" {
			id = strings.TrimSpace(r.PostFormValue("id"))
		}
		e, err := editorFor(kind, p.Tenant, id)
		if err != nil || id == "new" {
			if err == nil {
				err = fmt.Errorf("an id is required")
			}
			p.Error = err.Error()
			e = &editor{Kind: kind, Title: "New " + kind, New: true, Path: r.URL.Path, Text: r.PostFormValue("document"), ETag: `"0"`}
			p.Title, p.Data = e.Title, e
			c.render(w, http.StatusBadRequest, "edit", p)
			return
		}
		p.Title, p.Data = e.Title, e
		e.Text, e.ETag = r.PostFormValue("document"), r.PostFormValue("etag")
		saved := e.Path                 // the object's own page
		if r.PathValue("id") == "new" { // a create that fails stays a create, its id kept
			e.New, e.Deletable, e.Title = true, false, "New "+kind
			e.Path = strings.Replace(e.Path, "/"+url.PathEscape(id), "/new", 1)
			p.Title = e.Title
		}
		if e.ETag == "" {
			e.ETag = `"0"`
		}
		res := c.call(r.Context(), s, "PUT", e.API, []byte(e.Text), "If-Match", e.ETag)
		switch res.Status {
		case http.StatusOK, http.StatusCreated:
			http.Redirect(w, r, saved+"&notice="+url.QueryEscape("saved and in force (revision "+strings.Trim(res.Header.Get("ETag"), `"`)+")"), http.StatusSeeOther)
			return
		case http.StatusUnprocessableEntity:
			e.Problems = problemsOf(res.Body)
			p.Error = "not saved: " + res.errorMessage()
		case http.StatusPreconditionFailed:
			p.Error = "not saved: someone else changed it since you opened it. Your text is below; reload the page to see theirs, then redo the change."
		default:
			p.Error = "not saved: " + res.errorMessage()
		}
		c.render(w, res.Status, "edit", p)
	}
}

func (c *Console) remove(kind string) handler {
	return func(w http.ResponseWriter, r *http.Request, s *session) {
		p := newPage(s, r, "", kind)
		e, err := editorFor(kind, p.Tenant, r.PathValue("id"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		res := c.call(r.Context(), s, "DELETE", e.API, nil, "If-Match", r.PostFormValue("etag"))
		if res.Status != http.StatusNoContent && res.Status != http.StatusOK {
			p.Title, p.Data = e.Title, e
			e.Text, e.ETag = r.PostFormValue("document"), r.PostFormValue("etag")
			p.Error = "not deleted: " + res.errorMessage()
			c.render(w, res.Status, "edit", p)
			return
		}
		http.Redirect(w, r, "/"+kind+"s?tenant="+url.QueryEscape(p.Tenant), http.StatusSeeOther)
	}
}

// problemsOf reads every problem of a 422: the objects' problems (JSON pointers) or the hard
// blocks' fields.
func problemsOf(body []byte) []problem {
	var e struct {
		Error struct {
			Problems []problem `json:"problems"`
			Fields   []problem `json:"fields"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return append(e.Error.Problems, e.Error.Fields...)
}
