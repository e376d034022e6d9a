-- beads-git cache schema, version 2: what version 1 lacked. A fresh cache runs schema.sql and
-- then this file; a version-1 cache is migrated by running this file alone (nothing is lost).

-- Why bd leaves an issue out of its ready list although it is open and unblocked, decoded from
-- the line by import: 'pinned', 'ephemeral', or 'defer:<defer_until>' (hidden until then); NULL
-- for none. Not a field of the file: editing it changes nothing there.
ALTER TABLE issues ADD COLUMN ready_exclusion TEXT;
UPDATE issues SET ready_exclusion = CASE
    WHEN json_extract(raw, '$.pinned') = 1 THEN 'pinned'
    WHEN json_extract(raw, '$.ephemeral') = 1 THEN 'ephemeral'
    WHEN json_extract(raw, '$.defer_until') IS NOT NULL THEN 'defer:' || json_extract(raw, '$.defer_until')
END WHERE instr(raw, '"pinned"') OR instr(raw, '"ephemeral"') OR instr(raw, '"defer_until"');

-- `ready` walks the open issues in priority order and stops at --limit: this index answers the
-- filter and the order without a sort, and holds every column the list shows, so the (large)
-- issue rows are never read.
CREATE INDEX issues_ready ON issues (status, priority, created_at, id, ready_exclusion, issue_type, assignee, title);
-- The blocked set joins every `blocks` dependency to its blocker's status: this index answers
-- that without reading the (large) issue rows.
CREATE INDEX issues_status ON issues (id, status);

-- The `updated_at` an SQL edit stamps on its issue: now, in the file's style (meta
-- `timestamp_fraction`, recorded by import: N fixed fraction digits, or -1 when the file's writer
-- trims trailing zeros), always in UTC (`Z`). SQLite's clock has millisecond precision; wider
-- fixed styles are padded with zeros.
CREATE VIEW sql_edit_stamp AS
SELECT CASE coalesce((SELECT value FROM meta WHERE key = 'timestamp_fraction'), -1)
    WHEN -1 THEN rtrim(rtrim(strftime('%Y-%m-%dT%H:%M:%f', 'now'), '0'), '.') || 'Z'
    WHEN 0 THEN strftime('%Y-%m-%dT%H:%M:%SZ', 'now')
    WHEN 1 THEN substr(strftime('%Y-%m-%dT%H:%M:%f', 'now'), 1, 21) || 'Z'
    WHEN 2 THEN substr(strftime('%Y-%m-%dT%H:%M:%f', 'now'), 1, 22) || 'Z'
    ELSE strftime('%Y-%m-%dT%H:%M:%f', 'now')
         || substr('000000', 1, max(0, (SELECT value FROM meta WHERE key = 'timestamp_fraction') - 3)) || 'Z'
END AS stamp;

-- An SQL edit of an issue's columns, labels, dependencies or comments makes the issue newer, so
-- the `newest` policy of a later three-way import prefers it over an older edit of the file. An
-- UPDATE that sets `updated_at` itself keeps its value; one that changes no value stamps nothing.
CREATE TRIGGER issues_update_bumps_updated_at AFTER UPDATE OF title, status, priority, issue_type, assignee, owner,
    created_at, created_by, closed_at, close_reason, external_ref ON issues
    WHEN NOT EXISTS (SELECT 1 FROM sync_guard) AND NEW.updated_at IS OLD.updated_at
     AND (NEW.title IS NOT OLD.title OR NEW.status IS NOT OLD.status OR NEW.priority IS NOT OLD.priority
          OR NEW.issue_type IS NOT OLD.issue_type OR NEW.assignee IS NOT OLD.assignee OR NEW.owner IS NOT OLD.owner
          OR NEW.created_at IS NOT OLD.created_at OR NEW.created_by IS NOT OLD.created_by OR NEW.closed_at IS NOT OLD.closed_at
          OR NEW.close_reason IS NOT OLD.close_reason OR NEW.external_ref IS NOT OLD.external_ref)
BEGIN UPDATE issues SET updated_at = (SELECT stamp FROM sql_edit_stamp) WHERE id = NEW.id; END;
-- An issue created through SQL without timestamps gets both (bd and br require them).
CREATE TRIGGER issues_insert_stamps_updated_at AFTER INSERT ON issues
    WHEN NOT EXISTS (SELECT 1 FROM sync_guard) AND (NEW.updated_at IS NULL OR NEW.created_at IS NULL)
BEGIN
    UPDATE issues SET created_at = coalesce(created_at, (SELECT stamp FROM sql_edit_stamp)),
                      updated_at = coalesce(updated_at, (SELECT stamp FROM sql_edit_stamp)) WHERE id = NEW.id;
END;
CREATE TRIGGER labels_insert_bumps_updated_at AFTER INSERT ON labels WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN UPDATE issues SET updated_at = (SELECT stamp FROM sql_edit_stamp) WHERE id = NEW.issue_id; END;
CREATE TRIGGER labels_delete_bumps_updated_at AFTER DELETE ON labels WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN UPDATE issues SET updated_at = (SELECT stamp FROM sql_edit_stamp) WHERE id = OLD.issue_id; END;
CREATE TRIGGER dependencies_insert_bumps_updated_at AFTER INSERT ON dependencies WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN UPDATE issues SET updated_at = (SELECT stamp FROM sql_edit_stamp) WHERE id = NEW.issue_id; END;
CREATE TRIGGER dependencies_update_bumps_updated_at AFTER UPDATE OF depends_on_id, type ON dependencies
    WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN UPDATE issues SET updated_at = (SELECT stamp FROM sql_edit_stamp) WHERE id = NEW.issue_id; END;
CREATE TRIGGER dependencies_delete_bumps_updated_at AFTER DELETE ON dependencies WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN UPDATE issues SET updated_at = (SELECT stamp FROM sql_edit_stamp) WHERE id = OLD.issue_id; END;
CREATE TRIGGER comments_insert_bumps_updated_at AFTER INSERT ON comments WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN UPDATE issues SET updated_at = (SELECT stamp FROM sql_edit_stamp) WHERE id = NEW.issue_id; END;
CREATE TRIGGER comments_update_bumps_updated_at AFTER UPDATE OF author, text ON comments WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN UPDATE issues SET updated_at = (SELECT stamp FROM sql_edit_stamp) WHERE id = NEW.issue_id; END;
CREATE TRIGGER comments_delete_bumps_updated_at AFTER DELETE ON comments WHEN NOT EXISTS (SELECT 1 FROM sync_guard)
BEGIN UPDATE issues SET updated_at = (SELECT stamp FROM sql_edit_stamp) WHERE id = OLD.issue_id; END;
