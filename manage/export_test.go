package manage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/manage"
)

// TestExportImportRoundTrip: what one deployment exports, another imports to the same data;
// importing it again changes nothing; with prune, what the export does not hold goes.
func TestExportImportRoundTrip(t *testing.T) {
	a := newFixture(t)
	a.put(t, manage.KindTenant, "globex", "globex", `{"name":"true","account":"globex","monthlyModelCapUsd":12.5}`)
	a.put(t, manage.KindConnection, "globex", "globex-firecrawl", firecrawl)
	a.put(t, manage.KindProfile, "globex", "crawler", crawler)
	a.put(t, manage.KindEgress, "globex", "globex", `{"allow":["api.globex.example","*.cdn.globex.example:8443"]}`)
	ctx := context.Background()
	objs, err := a.svc.Stored(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	bounds := []manage.TenantDocument{{Tenant: "globex", Data: json.RawMessage(`{"version":1,"hardBlocks":[{"id":"no-env","enabled":true}]}`)}}
	if err := manage.WriteExport(&buf, objs, bounds); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	if !strings.Contains(text, "profiles:\n  - tenant: globex\n    id: crawler\n") {
		t.Errorf("the export is not in block style with tenant and id first:\n%s", text)
	}
	read, gotBounds, err := manage.ReadExport("export.yaml", buf.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if len(gotBounds) != 1 || !jsonEqual(gotBounds[0].Data, bounds[0].Data) {
		t.Errorf("boundaries %s, want %s", gotBounds, bounds)
	}
	b := newFixture(t)
	rep, err := b.svc.Import(ctx, read, false, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Created) != 4 || len(rep.Updated)+len(rep.Unchanged)+len(rep.Deleted) != 0 {
		t.Errorf("report %+v: want 4 created", rep)
	}
	got, err := b.svc.Stored(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(objs) {
		t.Fatalf("%d objects imported, want %d", len(got), len(objs))
	}
	for i := range objs {
		if got[i].Kind != objs[i].Kind || got[i].ID != objs[i].ID || got[i].Tenant != objs[i].Tenant || !jsonEqual(got[i].Data, objs[i].Data) {
			t.Errorf("object %d: got %s %s %s %s, want %s %s %s %s", i, got[i].Kind, got[i].ID, got[i].Tenant, got[i].Data, objs[i].Kind, objs[i].ID, objs[i].Tenant, objs[i].Data)
		}
	}
	if g, ok := b.svc.Policy().Tenant("globex"); !ok || len(g.Coworkers) != 1 {
		t.Errorf("the imported data is not in force: %+v", g)
	}
	rep, err = b.svc.Import(ctx, read, false, "bob")
	if err != nil || len(rep.Unchanged) != 4 {
		t.Errorf("a second import: %+v, %v; want all unchanged", rep, err)
	}
	// Prune: an export without the egress and the profile deletes them.
	var fewer []*manage.Object
	for _, o := range read {
		if o.Kind == manage.KindTenant || o.Kind == manage.KindConnection {
			fewer = append(fewer, o)
		}
	}
	rep, err = b.svc.Import(ctx, fewer, true, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"egress globex", "profile crawler"}; !slices.Equal(rep.Deleted, want) {
		t.Errorf("deleted %q, want %q", rep.Deleted, want)
	}
}

// TestImportValidatesFirst: an import with a bad object writes nothing and names it.
func TestImportValidatesFirst(t *testing.T) {
	f := open(t, filepath.Join(t.TempDir(), "w.db"), scout(t))
	text := "version: 1\ntenants:\n  - id: globex\n    name: Globex\nprofiles:\n  - tenant: globex\n    id: bad\n    tools: [nope]\n"
	objs, _, err := manage.ReadExport("x.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Import(context.Background(), objs, false, "bob")
	var inv manage.Invalid
	if !errors.As(err, &inv) || !strings.Contains(inv.Error(), "profile bad /tools/0") {
		t.Fatalf("err %v: want Invalid naming profile bad /tools/0", err)
	}
	if got, _ := f.svc.Stored(context.Background()); len(got) != 0 {
		t.Errorf("%d objects written by an invalid import", len(got))
	}
	if _, _, err := manage.ReadExport("x.yaml", []byte("version: 1\nwidgets: []\nprofiles:\n  - id: x\n")); err == nil ||
		!strings.Contains(err.Error(), "x.yaml:2:1: unknown section") || !strings.Contains(err.Error(), "x.yaml:4:") {
		t.Errorf("bad shape: %v", err)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
