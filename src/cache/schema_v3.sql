-- beads-git cache schema, version 3: what version 2 lacked. A fresh cache runs schema.sql,
-- schema_v2.sql and then this file; a version-2 cache is migrated by running this file alone, a
-- version-1 cache by schema_v2.sql and then this file (nothing is lost).

-- `ready`, `blocked` and `show` read every `blocks` and every `parent-child` dependency: this
-- index answers both as a range, in blocker order, without reading the dependency rows (at 1M
-- issues the `blocks` join fell from 1.25 s to 0.25 s, the `parent-child` read from 0.18 s to
-- 0.05 s).
CREATE INDEX IF NOT EXISTS dependencies_by_type ON dependencies (type, depends_on_id, issue_id);
