-- beads-git cache schema, version 1; schema_v2.sql adds what version 2 needs (PRAGMA user_version = 2).
-- The issues file is the source of truth; this is a query cache that can also take edits through
-- plain SQL (triggers record them in `dirty`, `bd-sync export` writes them back to the file).

-- One row per issue id. `raw` is the record's line as last imported from or exported to the
-- file: the base of the three-way merge when the file and the cache both changed. Columns hold
-- the common fields decoded (JSON strings as TEXT, numbers as INTEGER/REAL, anything else as its
-- JSON text); every other field stays in `raw` (query it with json_extract(raw, '$.field')).
CREATE TABLE issues (
    id            TEXT PRIMARY KEY NOT NULL,
    title         TEXT,
    status        TEXT,
    priority      ANY,
    issue_type    TEXT,
    assignee      TEXT,
    owner         TEXT,
    created_at    TEXT,
    created_by    TEXT,
    updated_at    TEXT,
    closed_at     TEXT,
    close_reason  TEXT,
    external_ref  TEXT,
    raw           TEXT,              -- NULL for an issue created through SQL and not yet exported
    line_hash     INTEGER            -- xxh3-64 of raw, for incremental import
) STRICT;

CREATE TABLE labels (
    issue_id  TEXT NOT NULL,
    label     TEXT NOT NULL,
    position  INTEGER NOT NULL DEFAULT 1000000000,
    PRIMARY KEY (issue_id, label)
) STRICT;

-- Identity of a dependency is (issue_id, depends_on_id, type). `raw` is the element's JSON text;
-- editing a column clears it so export renders the element from the columns.
CREATE TABLE dependencies (
    issue_id       TEXT NOT NULL,
    depends_on_id  TEXT NOT NULL,
    type           TEXT NOT NULL DEFAULT 'blocks',
    created_at     TEXT,
    created_by     TEXT,
    position       INTEGER NOT NULL DEFAULT 1000000000,
    raw            TEXT,
    PRIMARY KEY (issue_id, depends_on_id, type)
) STRICT;
CREATE INDEX dependencies_target ON dependencies (depends_on_id, type);

CREATE TABLE comments (
    rowid       INTEGER PRIMARY KEY,
    issue_id    TEXT NOT NULL,
    comment_id  ANY,                 -- the machine-local numeric id from the file
    author      TEXT,
    text        TEXT,
    created_at  TEXT,
    position    INTEGER NOT NULL DEFAULT 1000000000,   -- rows added through SQL sort last
    raw         TEXT
) STRICT;
CREATE INDEX comments_issue ON comments (issue_id);

-- Issues changed through SQL since the last export. A deleted issue has no row in `issues`;
-- `deleted_raw` keeps its last synced line as the base for a later three-way merge.
CREATE TABLE dirty (issue_id TEXT PRIMARY KEY NOT NULL, deleted_raw TEXT) STRICT;

-- Extra lines of ids that appear more than once in the file (kept verbatim).
CREATE TABLE duplicate_lines (
    issue_id  TEXT NOT NULL,
    line      INTEGER NOT NULL,
    raw       TEXT NOT NULL
) STRICT;

CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value ANY) STRICT;

-- While bd-sync itself writes, it holds a row here so the triggers below stay quiet.
CREATE TABLE sync_guard (held INTEGER) STRICT;

CREATE TRIGGER issues_insert_dirty AFTER INSERT ON issues WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN INSERT OR IGNORE INTO dirty (issue_id) VALUES (NEW.id); END;
CREATE TRIGGER issues_update_dirty AFTER UPDATE OF id, title, status, priority, issue_type, assignee, owner,
    created_at, created_by, updated_at, closed_at, close_reason, external_ref ON issues
    WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN INSERT OR IGNORE INTO dirty (issue_id) VALUES (NEW.id); INSERT OR IGNORE INTO dirty (issue_id) VALUES (OLD.id); END;
CREATE TRIGGER issues_delete_dirty AFTER DELETE ON issues WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN INSERT OR REPLACE INTO dirty (issue_id, deleted_raw) VALUES (OLD.id, OLD.raw); END;

CREATE TRIGGER labels_insert_dirty AFTER INSERT ON labels WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN INSERT OR IGNORE INTO dirty (issue_id) VALUES (NEW.issue_id); END;
CREATE TRIGGER labels_update_dirty AFTER UPDATE ON labels WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN INSERT OR IGNORE INTO dirty (issue_id) VALUES (NEW.issue_id); INSERT OR IGNORE INTO dirty (issue_id) VALUES (OLD.issue_id); END;
CREATE TRIGGER labels_delete_dirty AFTER DELETE ON labels WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN INSERT OR IGNORE INTO dirty (issue_id) VALUES (OLD.issue_id); END;

CREATE TRIGGER dependencies_insert_dirty AFTER INSERT ON dependencies WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN INSERT OR IGNORE INTO dirty (issue_id) VALUES (NEW.issue_id); END;
CREATE TRIGGER dependencies_update_dirty AFTER UPDATE OF issue_id, depends_on_id, type, created_at, created_by ON dependencies
    WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN
    UPDATE dependencies SET raw = NULL WHERE rowid = NEW.rowid;
    INSERT OR IGNORE INTO dirty (issue_id) VALUES (NEW.issue_id); INSERT OR IGNORE INTO dirty (issue_id) VALUES (OLD.issue_id);
END;
CREATE TRIGGER dependencies_delete_dirty AFTER DELETE ON dependencies WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN INSERT OR IGNORE INTO dirty (issue_id) VALUES (OLD.issue_id); END;

CREATE TRIGGER comments_insert_dirty AFTER INSERT ON comments WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN INSERT OR IGNORE INTO dirty (issue_id) VALUES (NEW.issue_id); END;
CREATE TRIGGER comments_update_dirty AFTER UPDATE OF issue_id, comment_id, author, text, created_at ON comments
    WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN
    UPDATE comments SET raw = NULL WHERE rowid = NEW.rowid;
    INSERT OR IGNORE INTO dirty (issue_id) VALUES (NEW.issue_id); INSERT OR IGNORE INTO dirty (issue_id) VALUES (OLD.issue_id);
END;
CREATE TRIGGER comments_delete_dirty AFTER DELETE ON comments WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN INSERT OR IGNORE INTO dirty (issue_id) VALUES (OLD.issue_id); END;

-- Issues held up by an open `blocks` dependency on an issue that is not closed, directly or
-- through a parent (parent-child: the child depends on the parent). A blocker id that is not in
-- the cache does not block (`bd-sync check` reports it as dangling).
CREATE VIEW blocked_ids AS
WITH RECURSIVE blocked(id) AS (
    SELECT d.issue_id FROM dependencies d JOIN issues b ON b.id = d.depends_on_id
     WHERE d.type = 'blocks' AND b.status NOT IN ('closed', 'tombstone', 'deleted')
    UNION
    SELECT d.issue_id FROM dependencies d JOIN blocked p ON d.depends_on_id = p.id
     WHERE d.type = 'parent-child'
)
SELECT id FROM blocked;

CREATE VIEW blocked_issues AS
SELECT i.* FROM issues i
 WHERE i.id IN (SELECT id FROM blocked_ids) AND i.status NOT IN ('closed', 'tombstone', 'deleted');

CREATE VIEW ready_issues AS
SELECT i.* FROM issues i
 WHERE i.status = 'open' AND i.id NOT IN (SELECT id FROM blocked_ids);
