package dynamostore

import (
	"context"
	"fmt"

	"github.com/slotq/slotq/internal/engine"
)

// The schema mark: one item, pk M#schema, sk schema, with the layout
// version of the table's records and how far a rebuild got
// (engine.Schema). A table without it is from before marks were kept.
const (
	pkSchema = "M#schema"
	skSchema = "schema"

	attrSchemaVersion = "schema_version"
	attrAfter         = "after"
)

// Schema reads the schema mark (strongly); a zero Schema if there is none.
func (s *Store) Schema(ctx context.Context) (engine.Schema, error) {
	m, err := s.getItem(ctx, key(pkSchema, skSchema))
	if err != nil {
		return engine.Schema{}, fmt.Errorf("schema: %w", err)
	}
	it := &item{m: m}
	sc := engine.Schema{Version: int(it.int(attrSchemaVersion)), After: it.str(attrAfter)}
	if it.err != nil {
		return engine.Schema{}, fmt.Errorf("schema: %w", it.err)
	}
	return sc, nil
}

// PutSchema writes the mark if it is still from, with one conditional
// PutItem. ErrConflict.
func (s *Store) PutSchema(ctx context.Context, sc, from engine.Schema) error {
	e := newExpr()
	// A zero from is no mark at all, or one at version 0.
	cond := e.n(attrSchemaVersion) + " = " + e.v(":fv", num(int64(from.Version)))
	if from.Version == 0 {
		cond = "(attribute_not_exists(" + e.n(attrSchemaVersion) + ") OR " + cond + ")"
	}
	if from.After == "" {
		cond += " AND attribute_not_exists(" + e.n(attrAfter) + ")"
	} else {
		cond += " AND " + e.n(attrAfter) + " = " + e.v(":fa", str(from.After))
	}
	m := key(pkSchema, skSchema)
	m[attrSchemaVersion] = num(int64(sc.Version))
	if sc.After != "" {
		m[attrAfter] = str(sc.After)
	}
	_, ok, err := s.putIf(ctx, m, e.build("", cond))
	if err != nil {
		return fmt.Errorf("put schema: %w", err)
	}
	if !ok {
		return fmt.Errorf("put schema: %w", engine.ErrConflict)
	}
	return nil
}
