package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kusionpr/kusionpr/model"
)

// pgObjects keeps the store's objects in PostgreSQL, a row per key, so that
// every rule of the object stores holds on it unchanged: a create-only
// write is an INSERT that does nothing when the key is taken (the primary
// key decides, as a bucket's If-None-Match does), an overwrite replaces the
// row in one statement, a listing is a range of the key's index. Releases,
// their index, leases, cancel requests and the executors' work are all the
// same rows, and a release also has a row of its own beside its object,
// which Query reads; Kusion's readers never see them.
type pgObjects struct {
	pool *pgxpool.Pool
}

// pgMigrations are the schema's versions, applied in order at open; each
// version's statements run once, in a transaction that also records it.
var pgMigrations = [][]string{
	// 1: the objects, and a row per release beside its object. Keys compare
	// byte by byte (COLLATE "C"), so a prefix is a range of the primary
	// key's index. A release row goes with its object (a foreign key), so a
	// row can only say what an object holds.
	{
		`CREATE TABLE kusionpr_objects (
			key      text COLLATE "C" PRIMARY KEY,
			data     bytea NOT NULL,
			modified timestamptz NOT NULL DEFAULT now()
		)`,
		`CREATE TABLE kusionpr_releases (
			key       text COLLATE "C" PRIMARY KEY REFERENCES kusionpr_objects (key) ON DELETE CASCADE,
			prefix    text COLLATE "C" NOT NULL,
			project   text NOT NULL,
			workspace text NOT NULL,
			revision  bigint NOT NULL,
			stack     text NOT NULL,
			phase     text NOT NULL,
			created   timestamptz NOT NULL,
			modified  timestamptz NOT NULL,
			message   text NOT NULL,
			origin    jsonb,
			UNIQUE (prefix, project, workspace, revision)
		)`,
		`CREATE INDEX kusionpr_releases_by_workspace ON kusionpr_releases (prefix, workspace, created DESC)`,
		`CREATE INDEX kusionpr_releases_running ON kusionpr_releases (prefix, created DESC) WHERE phase NOT IN ('succeeded', 'failed')`,
	},
}

// openPostgres opens a postgres:// store: the URL as libpq reads it (a
// password there or in PGPASSWORD, PGSSLMODE and the other PG* variables),
// its schema migrated to this version first.
func openPostgres(ctx context.Context, u *url.URL) (*Store, error) {
	where := location(u)
	q := u.Query()
	prefix, err := cleanPrefix(q.Get("prefix"))
	if err != nil {
		return nil, fmt.Errorf("open backend %s: %w", where, err)
	}
	q.Del("prefix")
	u.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, fmt.Errorf("open backend %s: not a PostgreSQL URL: %s", where, parseProblem(err, u))
	}
	// A few connections each: every runner, bot replica and Job opens
	// its own store, and a server's connections are counted.
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open backend %s: %w", where, pgError(err))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open backend %s: %w", where, describePgAccess(err, cfg.ConnConfig.Database))
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open backend %s: %w", where, err)
	}
	return &Store{obj: pgObjects{pool: pool}, prefix: prefix}, nil
}

// migrate brings the schema to the newest version: the versions applied
// are recorded; two processes migrating at once are ordered by an advisory
// lock, so each migration runs once.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('kusionpr_migrations'))`); err != nil {
			return fmt.Errorf("lock the schema: %w", pgError(err))
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS kusionpr_schema (version int PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("create the schema's table: %w", pgError(err))
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM kusionpr_schema`).Scan(&have); err != nil {
			return fmt.Errorf("read the schema's version: %w", pgError(err))
		}
		if have > len(pgMigrations) {
			return fmt.Errorf("the database's schema is version %d, newer than this program's %d: run a newer kusionpr", have, len(pgMigrations))
		}
		for v := have + 1; v <= len(pgMigrations); v++ {
			for _, stmt := range pgMigrations[v-1] {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("migrate the schema to version %d: %w", v, pgError(err))
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO kusionpr_schema (version) VALUES ($1)`, v); err != nil {
				return fmt.Errorf("record schema version %d: %w", v, pgError(err))
			}
		}
		return nil
	})
}

// describePgAccess says what to fix when the server refuses the
// database, in the words a missing bucket or bad credentials get.
func describePgAccess(err error, db string) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "3D000": // invalid_catalog_name
			return fmt.Errorf("database %q does not exist; create it, or fix the database name", db)
		case "28P01", "28000": // invalid_password, invalid_authorization_specification
			return fmt.Errorf("access to database %q denied: check the credentials and that they may read and write it", db)
		}
	}
	return pgError(err)
}

func (o pgObjects) exists(ctx context.Context, key string) (bool, error) {
	var ok bool
	err := o.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM kusionpr_objects WHERE key = $1)`, key).Scan(&ok)
	return ok, pgError(err)
}

func (o pgObjects) read(ctx context.Context, key string, limit int64) ([]byte, error) {
	// The row's size first, and at most limit+1 bytes of it: a huge row
	// is refused without being sent.
	var size int64
	var data []byte
	err := o.pool.QueryRow(ctx, `SELECT octet_length(data), substring(data FROM 1 FOR $2) FROM kusionpr_objects WHERE key = $1`, key, limit+1).Scan(&size, &data)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("%w: %s", errObjectMissing, key)
	case err != nil:
		return nil, pgError(err)
	case size > limit:
		return nil, fmt.Errorf("%w: %d bytes, more than %d", errObjectTooLarge, size, limit)
	}
	return data, nil
}

func (o pgObjects) list(ctx context.Context, prefix string) ([]string, error) {
	rows, err := o.pool.Query(ctx, `SELECT substr(key, $3) FROM kusionpr_objects
		WHERE key >= $1 AND ($2 = '' OR key < $2) AND strpos(substr(key, $3), '/') = 0 ORDER BY key`,
		prefix, prefixEnd(prefix), len(prefix)+1)
	if err != nil {
		return nil, pgError(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return names, pgError(err)
}

// prefixEnd is the least key above every key starting with prefix ("" for
// none: a prefix of 0xff bytes only).
func prefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

func (o pgObjects) write(ctx context.Context, key string, data []byte, createOnly bool) error {
	if data == nil {
		data = []byte{} // an empty object, not NULL
	}
	if createOnly {
		tag, err := o.pool.Exec(ctx, `INSERT INTO kusionpr_objects (key, data) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, key, data)
		if err != nil {
			return pgError(err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: %s", errObjectExists, key)
		}
		return nil
	}
	_, err := o.pool.Exec(ctx, `INSERT INTO kusionpr_objects (key, data) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET data = excluded.data, modified = now()`, key, data)
	return pgError(err)
}

// writeRelease writes the release's object and its row in one statement:
// the object's INSERT decides, as write's does, and the row follows only
// the object written.
func (o pgObjects) writeRelease(ctx context.Context, key string, data []byte, createOnly bool, prefix string, r *model.Release) error {
	var origin []byte
	if r.Origin != nil {
		var err error
		if origin, err = json.Marshal(r.Origin); err != nil {
			return err
		}
	}
	onConflict := `ON CONFLICT (key) DO UPDATE SET data = excluded.data, modified = now()`
	if createOnly {
		onConflict = `ON CONFLICT (key) DO NOTHING`
	}
	tag, err := o.pool.Exec(ctx, `WITH object AS (
			INSERT INTO kusionpr_objects (key, data) VALUES ($1, $2) `+onConflict+` RETURNING key
		)
		INSERT INTO kusionpr_releases (key, prefix, project, workspace, revision, stack, phase, created, modified, message, origin)
		SELECT key, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 FROM object
		ON CONFLICT (key) DO UPDATE SET stack = excluded.stack, phase = excluded.phase, created = excluded.created,
			modified = excluded.modified, message = excluded.message, origin = excluded.origin`,
		key, data, prefix, r.Project, r.Workspace, int64(r.Revision), r.Stack, string(r.Phase),
		r.CreateTime, r.ModifiedTime, r.Message, origin)
	if err != nil {
		return pgError(err)
	}
	if createOnly && tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", errObjectExists, key)
	}
	return nil
}

func (o pgObjects) queryReleases(ctx context.Context, prefix string, q ReleaseQuery) ([]*model.Release, int, error) {
	var limit any // NULL: no limit
	if q.Limit > 0 {
		limit = q.Limit
	}
	rows, err := o.pool.Query(ctx, `SELECT project, workspace, revision, stack, phase, created, modified, message, origin, count(*) OVER ()
		FROM kusionpr_releases
		WHERE prefix = $1 AND ($2 = '' OR project = $2) AND ($3 = '' OR workspace = $3)
			AND (NOT $4 OR phase NOT IN ('succeeded', 'failed'))
		ORDER BY created DESC, project, workspace, revision DESC
		LIMIT $5`, prefix, q.Project, q.Workspace, q.Running, limit)
	if err != nil {
		return nil, 0, pgError(err)
	}
	defer rows.Close()
	var (
		out   []*model.Release
		total int
	)
	for rows.Next() {
		var (
			r      model.Release
			rev    int64
			phase  string
			origin []byte
		)
		if err := rows.Scan(&r.Project, &r.Workspace, &rev, &r.Stack, &phase, &r.CreateTime, &r.ModifiedTime, &r.Message, &origin, &total); err != nil {
			return nil, 0, pgError(err)
		}
		r.Revision, r.Phase = uint64(rev), model.Phase(phase)
		if origin != nil {
			r.Origin = &model.Origin{}
			if err := json.Unmarshal(origin, r.Origin); err != nil {
				return nil, 0, fmt.Errorf("release %s/%s/%d's origin: %w", r.Project, r.Workspace, rev, err)
			}
		}
		out = append(out, &r)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, pgError(err)
	}
	return out, total - len(out), nil
}

func (o pgObjects) readIndex(ctx context.Context, prefix, project, workspace string) (*index, error) {
	rows, err := o.pool.Query(ctx, `SELECT revision, stack, phase FROM kusionpr_releases
		WHERE prefix = $1 AND project = $2 AND workspace = $3 ORDER BY revision`, prefix, project, workspace)
	if err != nil {
		return nil, pgError(err)
	}
	defer rows.Close()
	ix := &index{}
	for rows.Next() {
		var (
			e     indexEntry
			rev   int64
			phase string
		)
		if err := rows.Scan(&rev, &e.Stack, &phase); err != nil {
			return nil, pgError(err)
		}
		e.Revision, e.Phase = uint64(rev), model.Phase(phase)
		ix.Releases = append(ix.Releases, &e)
		ix.LatestRevision = e.Revision
	}
	return ix, pgError(rows.Err())
}

func (o pgObjects) close() error {
	o.pool.Close()
	return nil
}

// parseProblem is what pgx found wrong with the URL ("sslmode is
// invalid"), without the connection string it quotes: pgx redacts the
// password there only as best it can.
func parseProblem(err error, u *url.URL) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "`: "); i >= 0 {
		msg = msg[i+len("`: "):]
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		msg = strings.ReplaceAll(msg, pw, "redacted")
	}
	return msg
}

// pgError keeps a connection string's password out of an error: pgx's
// connect errors quote the host and user, never the password, but a
// parse error may quote the whole string.
func pgError(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.ConnectError
	if errors.As(err, &pe) {
		return fmt.Errorf("connect to PostgreSQL: %s", strings.TrimSpace(unquotePassword(pe.Error())))
	}
	return err
}

func unquotePassword(s string) string {
	if i := strings.Index(s, "password="); i >= 0 {
		j := strings.IndexAny(s[i:], " ")
		if j < 0 {
			j = len(s) - i
		}
		s = s[:i] + "password=redacted" + s[i+j:]
	}
	return s
}
