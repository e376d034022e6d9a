-- beads-git cache schema, version 4: what version 3 lacked. A fresh cache runs schema.sql,
-- schema_v2.sql, schema_v3.sql and then this file; an older cache is migrated by running the
-- files after its version (nothing is lost).

-- Every import (after each pull, checkout and rebase that changed the issues file) reads each
-- issue's line hash to find the lines that changed. From the table that read passes over every
-- record's text (`line_hash` comes after `raw`, in its overflow pages): the whole database, 221 MB
-- at 100k generated issues. This index holds the two columns alone, a few MB.
CREATE INDEX IF NOT EXISTS issues_line_hash ON issues (id, line_hash);
