//! Installation health for `bd-sync check`: every way we can be installed, and every way that
//! can silently stop working (a manager regenerating its files, a clone that has the committed
//! attributes but not the driver, a block git never reaches).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::block::{block_is_first, calls_our_entry_point, find_block, interpreter, is_executable, runs_posix_shell};
use super::hooks::{hook_target, stray_block_files, HookTarget};
use super::managers::{self, Manager};
use super::state::{config_get, hooks_dir, outside_repository, read_optional, read_state, toplevel};
use super::{Binaries, Hook};
use crate::check::{Finding, FindingKind};
use crate::fix::Fix;
use crate::git::run as git;

fn finding(kind: FindingKind, message: String) -> Finding {
    Finding::new(kind, None, Vec::new(), message)
}

/// A finding that installing again fixes.
fn install_fixes(kind: FindingKind, message: String) -> Finding {
    finding(kind, message).with_fix(Fix::Install)
}

/// Installation findings; empty when the repository never had us (no install record, no driver,
/// no `merge=beads` attribute).
pub fn health(repo: &Path, bin_dir: &Path) -> Result<Vec<Finding>> {
    let top = toplevel(repo)?;
    let repo = top.as_path();
    let mut out = Vec::new();
    let state = read_state(repo)?;
    let uninstalled = state.as_ref().is_some_and(|s| s.uninstalled);
    let installed = state.is_some() && !uninstalled;
    let driver = config_get(repo, "merge.beads.driver");
    let attributed: Vec<&str> = crate::jsonl::ISSUES_PATHS
        .into_iter()
        .filter(|f| git(repo, &["check-attr", "merge", "--", f]).unwrap_or_default().ends_with(": beads"))
        .collect();
    if !installed && driver.is_none() && attributed.is_empty() {
        return Ok(out);
    }
    if uninstalled && driver.is_none() {
        // One line for the truth, not a finding per hook `bd-sync uninstall` removed on purpose.
        out.push(install_fixes(
            FindingKind::DriverMissing,
            format!(
                "beads-git is not installed in this clone (`bd-sync uninstall` ran); the committed attributes still send {} to \
                    merge=beads, so git line-merges it here",
                if attributed.is_empty() { "the issues file".to_owned() } else { attributed.join(" and ") }
            ),
        ));
        return Ok(out);
    }
    out.extend(driver_findings(driver.as_deref(), &attributed));
    if attributed.len() < 2 {
        for file in crate::jsonl::ISSUES_PATHS.into_iter().filter(|f| !attributed.contains(f)) {
            out.push(super::attributes::attribute_missing(repo, file));
        }
    }
    if !installed {
        return Ok(out);
    }
    let hooks = hooks_dir(repo)?;
    let manager = managers::detect(&top, &hooks);
    let mut targets = Vec::new();
    match &manager {
        Manager::Plain | Manager::Husky { .. } => targets = hook_file_findings(&mut out, repo, &manager, &hooks, bin_dir)?,
        Manager::Lefthook { main } => {
            let local = managers::lefthook_local_path(&top, main.as_deref());
            let configs: Vec<&Path> = [Some(local.as_path()), main.as_deref()].into_iter().flatten().collect();
            manager_health(&mut out, &hooks, "lefthook", &configs);
        }
        Manager::PreCommit { config } => manager_health(&mut out, &hooks, "pre-commit", &[config.as_path()]),
    }
    out.extend(stray_findings(repo, &hooks, &manager, &targets)?);
    Ok(out)
}

/// The driver's configuration: set, with git's placeholders, pointing at a program that exists.
fn driver_findings(driver: Option<&str>, attributed: &[&str]) -> Vec<Finding> {
    let mut out = Vec::new();
    match driver {
        None if !attributed.is_empty() => out.push(install_fixes(
            FindingKind::DriverMissing,
            format!(
                "the attributes send {} to merge=beads, but this clone has no merge.beads.driver, so git silently line-merges it",
                attributed.join(" and ")
            ),
        )),
        None => out.push(install_fixes(FindingKind::DriverMissing, "merge.beads.driver is not set".into())),
        Some(d) => {
            let words: Vec<&str> = d.split_whitespace().collect();
            if d.contains("%R") || (words.iter().filter(|w| **w == "%A").count() > 1) {
                out.push(install_fixes(
                    FindingKind::DriverPlaceholders,
                    format!("merge.beads.driver = {d:?} uses bd's old broken form (%L %R / %A twice)"),
                ));
            } else if !["%O", "%A", "%B"].iter().all(|p| words.contains(p)) {
                out.push(install_fixes(FindingKind::DriverPlaceholders, format!("merge.beads.driver = {d:?} lacks %O %A %B")));
            }
            if let Some(program) = missing_program(d) {
                out.push(
                    finding(
                        FindingKind::DriverMissingBinary,
                        format!(
                            "merge.beads.driver runs {}, which does not exist (bd-merge moved or was removed), so git fails every merge \
                                of the issues file",
                            crate::record::printable(&program, 200)
                        ),
                    )
                    .with_fix(Fix::ReinstallBinaries),
                );
            }
        }
    }
    out
}

/// Plain git hooks and husky: each of our hooks holds the current block, first, runnable.
/// Returns the hook files looked at.
fn hook_file_findings(out: &mut Vec<Finding>, repo: &Path, manager: &Manager, hooks: &Path, bin_dir: &Path) -> Result<Vec<PathBuf>> {
    let mut targets = Vec::new();
    let (dir, binaries) = match manager {
        Manager::Husky { dir } => (dir.clone(), Binaries::Path),
        _ => (hooks.to_path_buf(), Binaries::Dir(bin_dir.to_path_buf())),
    };
    if matches!(manager, Manager::Plain) && outside_repository(repo, hooks)? {
        out.push(finding(
            FindingKind::HooksDirShared,
            format!(
                "git runs hooks from {}, outside this repository (a global core.hooksPath shared by every repository)",
                hooks.display()
            ),
        ));
    }
    let taken_over = matches!(manager, Manager::Plain) && hooks_path_without_blocks(out, repo, hooks);
    for hook in Hook::ALL {
        let path = dir.join(hook.file_name());
        targets.push(path.clone());
        let target = match hook_target(&path, repo)? {
            HookTarget::File(t) => t,
            HookTarget::Refused(why) => {
                let found = finding(FindingKind::HookSymlinkOutside, why.message(&path));
                out.push(match why.fix() {
                    Some(fix) => found.with_fix(fix),
                    None => found,
                });
                continue;
            }
        };
        let content = read_optional(&target).ok().flatten().unwrap_or_default();
        if !runs_posix_shell(&content) {
            if !calls_our_entry_point(&content, hook.file_name()) {
                let interpreter = crate::record::printable(&interpreter(&content).unwrap_or_default(), 80);
                out.push(
                    finding(FindingKind::HookForeignInterpreter, format!("{} is a {interpreter} hook", path.display()))
                        .with_fix(Fix::CallHookEntryPoint { hook: hook.file_name().to_owned() }),
                );
            }
            continue;
        }
        let want = hook.block(&binaries);
        match find_block(&content) {
            // Said once, with the setting that causes it, by `hooks_path_without_blocks`.
            None if taken_over => {}
            None => out.push(install_fixes(
                FindingKind::HookMissing,
                format!("{} has no beads-git block (a hook manager may have regenerated it)", path.display()),
            )),
            Some((s, e)) => {
                if String::from_utf8_lossy(&content[s..e]).trim_end() != want.trim_end() || !block_is_first(&content) {
                    out.push(install_fixes(
                        FindingKind::HookOutdated,
                        format!("{} has an outdated or misplaced beads-git block (code above it can skip it)", path.display()),
                    ));
                }
                if matches!(manager, Manager::Plain) && !is_executable(&path) {
                    out.push(
                        finding(FindingKind::HookNotExecutable, format!("{} is not executable, so git skips it", path.display()))
                            .with_fix(Fix::MakeExecutable),
                    );
                }
            }
        }
    }
    Ok(targets)
}

/// `core.hooksPath` set (by another tool, or by hand) to a directory where none of our hook
/// files holds a block: one finding naming the setting, where it is set, and both ways out.
/// Returns whether it was reported.
fn hooks_path_without_blocks(out: &mut Vec<Finding>, repo: &Path, hooks: &Path) -> bool {
    let Ok(origin) = git(repo, &["config", "--show-origin", "--get", "core.hooksPath"]) else { return false };
    let (from, value) = origin.split_once('\t').unwrap_or(("", origin.as_str()));
    let any_block = Hook::ALL.iter().any(|h| {
        let path = hooks.join(h.file_name());
        hook_target(&path, repo)
            .ok()
            .and_then(HookTarget::file)
            .and_then(|t| read_optional(&t).ok().flatten())
            .is_some_and(|c| find_block(&c).is_some())
    });
    if any_block {
        return false;
    }
    let file = from.strip_prefix("file:").unwrap_or(from);
    // git names the repository's own config relative to where it ran.
    let line = std::fs::read_to_string(repo.join(file))
        .ok()
        .and_then(|text| text.lines().position(|l| l.trim_start().to_ascii_lowercase().starts_with("hookspath")).map(|n| n + 1));
    let at = match line {
        Some(n) => format!("{file}:{n}"),
        None if file.is_empty() => "git config".to_owned(),
        None => file.to_owned(),
    };
    let value = crate::record::printable(value, 200);
    out.push(
        finding(
            FindingKind::HooksPathWithoutBlocks,
            format!(
                "core.hooksPath = {value} ({}) sends git to {}, which holds no beads-git block (another tool took over the hooks), \
                 so none of our hooks run",
                crate::record::printable(&at, 400),
                crate::record::printable(&hooks.display().to_string(), 400),
            ),
        )
        .with_fix(Fix::InstallOrUnsetHooksPath),
    );
    true
}

/// Our block in files git never runs (renamed by a manager, generated, or left in a directory
/// git no longer uses).
fn stray_findings(repo: &Path, hooks: &Path, manager: &Manager, targets: &[PathBuf]) -> Result<Vec<Finding>> {
    let mut out = Vec::new();
    for stray in stray_block_files(repo, hooks)? {
        if targets.contains(&stray) {
            continue;
        }
        let name = stray.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let why = if name.ends_with(".old") || name.ends_with(".legacy") {
            "a hook manager renamed it and does not run it".to_owned()
        } else if fs::read(&stray).ok().and_then(|c| managers::generated_by(&c)).is_some() {
            "the file is generated by a hook manager, which will overwrite it".to_owned()
        } else {
            format!("git runs this repository's hooks through {} now", manager.name())
        };
        out.push(
            finding(FindingKind::HookUnreachable, format!("{} holds a beads-git block that never runs ({why})", stray.display()))
                .with_fix(Fix::MoveStrayBlock),
        );
    }
    Ok(out)
}

/// lefthook / pre-commit: our jobs in a config, and the manager's hook files for our hooks.
fn manager_health(out: &mut Vec<Finding>, hooks: &Path, name: &str, configs: &[&Path]) {
    out.extend(manager_skips(name, configs));
    let has_jobs = configs.iter().any(|c| fs::read(c).ok().is_some_and(|b| find_block(&b).is_some()));
    if !has_jobs {
        let files: Vec<String> = configs.iter().map(|c| c.display().to_string()).collect();
        out.push(install_fixes(
            FindingKind::ManagerConfigMissing,
            format!("{name} runs the hooks, but {} has no beads-git jobs", files.join(" / ")),
        ));
    }
    for hook in Hook::ALL {
        let path = hooks.join(hook.file_name());
        let generated = fs::read(&path).ok().and_then(|c| managers::generated_by(&c)) == Some(name);
        if !generated || !is_executable(&path) {
            out.push(
                finding(
                    FindingKind::ManagerHookMissing,
                    format!("{name} has not installed {}, so our {} job never runs", path.display(), hook.file_name()),
                )
                // The command install runs (`managed::run_manager_install`).
                .with_fix(Fix::RunManager { command: format!("{name} install") }),
            );
        }
    }
}

/// The program a shell command line starts with, when it cannot be found: an absolute path that
/// does not exist, or a bare
/// name on no `PATH` directory. Quoting as [`super::shell_quote`] writes it (single quotes) is undone.
fn missing_program(command: &str) -> Option<String> {
    let command = command.trim_start();
    let program = if let Some(rest) = command.strip_prefix('\'') {
        // 'a'\''b' style: join the quoted runs up to the first unquoted space.
        let mut out = String::new();
        let mut chars = rest.chars().peekable();
        let mut quoted = true;
        while let Some(c) = chars.next() {
            match c {
                '\'' => quoted = !quoted,
                '\\' if !quoted => out.extend(chars.next()),
                c if c.is_whitespace() && !quoted => break,
                c => out.push(c),
            }
        }
        out
    } else {
        command.split_whitespace().next()?.to_owned()
    };
    if program.is_empty() || program.contains(['$', '`', '"']) {
        return None; // a shell expression: not ours to judge
    }
    // Windows names a program `bd-merge.exe` where the command says `bd-merge`.
    let runnable = |path: &Path| {
        let suffix = std::env::consts::EXE_SUFFIX.trim_start_matches('.');
        path.is_file() || (!suffix.is_empty() && path.with_extension(suffix).is_file())
    };
    let exists = if program.starts_with('/') || Path::new(&program).is_absolute() {
        runnable(Path::new(&program))
    } else if program.contains('/') || (cfg!(windows) && program.contains('\\')) {
        return None; // relative to the top of the work tree, where git runs it: left to git
    } else {
        std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| runnable(&d.join(&program))))
    };
    (!exists).then_some(program)
}

/// A manager configured to skip our job: lefthook's `skip` on a `beads-git` job or on a whole
/// hook we use (in any of its configs), and the variables that skip jobs by name when they are
/// set in the environment `check` runs in (a shell profile sets them for every commit):
/// `LEFTHOOK=0`, `LEFTHOOK_EXCLUDE`, pre-commit's `SKIP`.
fn manager_skips(name: &str, configs: &[&Path]) -> Vec<Finding> {
    let mut out = Vec::new();
    if name == "lefthook" {
        for config in configs {
            let Ok(Some(bytes)) = crate::safe_fs::read_regular(config, 4 << 20) else { continue };
            for (line, what) in lefthook_skips(&String::from_utf8_lossy(&bytes)) {
                out.push(finding(
                    FindingKind::ManagerSkipsBlock,
                    format!(
                        "{}:{line}: `skip` on {what}, so lefthook never runs beads-git's step there: remove that `skip` line",
                        config.display()
                    ),
                ));
            }
        }
    }
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let ours =
        |list: &str, prefix: &str| list.split([',', ' ']).map(str::trim).any(|w| w == prefix || w.starts_with(&format!("{prefix}-")));
    let variables: Vec<(&str, bool)> = match name {
        "lefthook" => vec![
            ("LEFTHOOK", env("LEFTHOOK") == "0" || env("LEFTHOOK") == "false"),
            ("LEFTHOOK_EXCLUDE", ours(&env("LEFTHOOK_EXCLUDE"), "beads-git")),
        ],
        "pre-commit" => vec![("SKIP", ours(&env("SKIP"), "beads-git"))],
        _ => Vec::new(),
    };
    for (var, skips) in variables {
        if skips {
            out.push(finding(
                FindingKind::ManagerSkipsBlock,
                format!(
                    "{var}={} in this environment makes {name} skip beads-git's jobs: take beads-git out of it where it is set (a shell \
                        profile, an .envrc)",
                    crate::record::printable(&env(var), 200)
                ),
            ));
        }
    }
    out
}

/// The lines of a lefthook YAML config that skip our jobs: `skip` (anything but `false`) inside a
/// job named `beads-git`, or directly under one of our hooks. Returns (1-based line, what).
fn lefthook_skips(text: &str) -> Vec<(usize, String)> {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let hooks: Vec<&str> = Hook::ALL.iter().map(|h| h.file_name()).collect();
    let mut out = Vec::new();
    let mut hook: Option<&str> = None;
    let mut hook_body: Option<usize> = None;
    // Our job: the indentation of its `- name: beads-git` dash.
    let mut job: Option<usize> = None;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let ind = indent(line);
        if ind == 0 {
            let key = trimmed.split(':').next().unwrap_or("").trim().trim_matches(['"', '\'']);
            hook = hooks.iter().copied().find(|h| *h == key);
            hook_body = None;
            job = None;
            continue;
        }
        let Some(h) = hook else { continue };
        let body = *hook_body.get_or_insert(ind);
        if let Some(dash) = job {
            if ind <= dash {
                job = None;
            }
        }
        // lefthook's older form: `commands:` keyed by name.
        if trimmed == "beads-git:" {
            job = Some(ind);
            continue;
        }
        let item = trimmed.strip_prefix("- ").map(str::trim_start);
        if let Some(rest) = item {
            let value = rest.strip_prefix("name:").map(|v| v.trim().trim_matches(['"', '\'']));
            if value == Some("beads-git") {
                job = Some(ind);
            }
            // `- skip: true` cannot start a job named beads-git; only `name:` does.
            continue;
        }
        let is_skip = trimmed.strip_prefix("skip:").map(|v| v.trim().trim_matches(['"', '\'']));
        let Some(value) = is_skip else { continue };
        if value == "false" {
            continue;
        }
        if job.is_some() {
            out.push((n + 1, format!("the beads-git job of {h}")));
        } else if ind == body {
            out.push((n + 1, format!("the whole {h} hook")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{lefthook_skips, missing_program};

    // Unix paths: on Windows a name with a drive letter would leave the temporary directory.
    #[cfg(unix)]
    #[test]
    fn the_driver_path_install_writes_is_found_whatever_its_characters() {
        let dir = tempfile::tempdir().expect("tmp");
        for name in ["plain", "with space", "back\\slash", "it's", "C:\\Program Files\\beads-git"] {
            let bin_dir = dir.path().join(name);
            std::fs::create_dir_all(&bin_dir).expect("mkdir");
            let command = crate::install::driver_command(&bin_dir);
            assert_eq!(missing_program(&command).as_deref(), Some(bin_dir.join("bd-merge").to_str().expect("utf-8")), "{command}");
            std::fs::write(bin_dir.join("bd-merge"), b"").expect("write");
            assert_eq!(missing_program(&command), None, "{command}");
        }
    }

    #[test]
    fn lefthook_skip_on_our_job_or_our_hook_is_found() {
        let text = "pre-commit:\n  jobs:\n    - name: lint\n      skip: true\n    - name: beads-git\n      run: x\n      skip:\n        - \
            merge\npost-merge:\n  skip: true\n  jobs:\n    - name: beads-git\n      skip: false\nlint:\n  skip: true\n";
        let found = lefthook_skips(text);
        assert_eq!(found, vec![(7, "the beads-git job of pre-commit".to_owned()), (10, "the whole post-merge hook".to_owned())]);
        let commands = "post-checkout:\n  commands:\n    beads-git:\n      run: x\n      skip: [rebase]\n    other:\n      skip: true\n";
        assert_eq!(lefthook_skips(commands), vec![(5, "the beads-git job of post-checkout".to_owned())]);
    }
}
