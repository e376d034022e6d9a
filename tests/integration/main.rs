//! One integration-test binary, a module per topic. Every test uses real files, real git
//! repositories in temporary directories and the real binaries.

mod support;

mod advice;
mod br_check;
mod br_collisions;
mod br_roundtrip;
mod bridge_context;
mod bridge_hooks;
mod bridge_links;
mod bridge_read;
mod cli;
mod cli_dialect;
mod commit_forms;
mod completion;
mod concurrency;
mod conventions;
mod crash;
mod docs_links;
mod generate;
mod history;
mod hook;
mod hook_spawns;
mod hostile;
mod hostile_completion;
mod hostile_log;
mod hostile_merge;
mod hostile_output;
mod hosting;
mod import_renames;
mod import_targeted;
mod install;
mod layout;
mod manager_hook_types;
mod managers;
mod merge_corners;
mod merge_equivalence;
mod merge_fixtures;
mod merge_git;
mod merge_properties;
mod queries;
mod repair;
mod repair_history;
mod review;
mod stale_export;
mod sync;
