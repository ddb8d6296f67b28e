package backend

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgObjects keeps the store's objects in PostgreSQL, a row per key, so that
// every rule of the object stores holds on it unchanged: a create-only
// write is an INSERT that does nothing when the key is taken (the primary
// key decides, as a bucket's If-None-Match does), an overwrite replaces the
// row in one statement, a listing is a range of the key's index. Releases,
// their index, leases, cancel requests and the executors' work are all the
// same rows; Kusion's readers never see them.
type pgObjects struct {
	pool *pgxpool.Pool
}

// pgMigrations are the schema's versions, applied in order at open; each
// runs once, in a transaction that also records it.
var pgMigrations = []string{
	// 1: the objects. Keys compare byte by byte (COLLATE "C"), so a prefix
	// is a range of the primary key's index.
	`CREATE TABLE kusionpr_objects (
		key      text COLLATE "C" PRIMARY KEY,
		data     bytea NOT NULL,
		modified timestamptz NOT NULL DEFAULT now()
	)`,
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
		// pgx quotes the connection string, password included.
		return nil, fmt.Errorf("open backend %s: not a PostgreSQL URL", where)
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
			if _, err := tx.Exec(ctx, pgMigrations[v-1]); err != nil {
				return fmt.Errorf("migrate the schema to version %d: %w", v, pgError(err))
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

func (o pgObjects) close() error {
	o.pool.Close()
	return nil
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
