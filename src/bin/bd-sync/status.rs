//! `bd-sync status`: paths, counts and whether the cache is in step with the file.

use crate::common::error::CommandResult;
use std::process::ExitCode;
use std::time::Duration;

use beads_git::cache::query;
use beads_git::record::escaped;

use crate::Global;

pub(crate) fn run(global: &Global) -> CommandResult {
    let s = query::status_of(&global.paths(None)?, Duration::from_secs(10))?;
    if global.json {
        Global::print_json(&s)?;
    } else if !s.cache_exists {
        outln!("file    {}", escaped(&s.file));
        outln!("cache   {} (none yet: `bd-sync import`, or any query, creates it)", escaped(&s.db));
    } else {
        outln!("file    {}", escaped(&s.file));
        outln!("cache   {} (schema {})", escaped(&s.db), s.schema_version);
        let by: Vec<String> = s.by_status.iter().map(|(k, v)| format!("{v} {}", escaped(k))).collect();
        outln!("issues  {} ({})", s.issues, by.join(", "));
        outln!("dirty   {} unexported edit(s)", s.dirty);
        outln!(
            "fresh   {}",
            if s.file_changed_since_sync { "no: the file changed since the last sync (run bd-sync import)" } else { "yes" }
        );
    }
    Ok(ExitCode::SUCCESS)
}
