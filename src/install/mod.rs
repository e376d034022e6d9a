//! `bd-sync install` / `uninstall`: the merge driver, the attribute lines, and our hooks, placed
//! where whoever runs this repository's hooks will run them.
//!
//! git config and attributes are simple. Hooks are not: a team may run them through husky,
//! lefthook or pre-commit, which own and regenerate the files git executes. [`managers`] finds
//! which one is in charge and integrates the way it documents; [`block`] places our marked block
//! in a hook file so that it always runs and never changes the hook's outcome. Everything install
//! does is recorded (with paths relative to the repository, so a copied clone never reaches back
//! into the original) and undone exactly by uninstall. [`health`] is the same knowledge run
//! backwards for `bd-sync check`.

mod attr_source;
pub mod block;
pub mod managers;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

pub use block::{install_block, uninstall_block, ModePolicy, BEGIN, END};
use managers::Manager;

use crate::git::run as git;

/// The hooks we install, with their templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// Notify the ids changed by the commit just made.
    PostCommit,
    /// Import after a merge (pull), then notify.
    PostMerge,
    /// Import after a rebase or amend, then notify.
    PostRewrite,
    /// Import after a branch switch, then notify.
    PostCheckout,
    /// Export cache edits and stage the issues file if that changed it.
    PreCommit,
}

/// Where a block finds our binaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binaries {
    /// This directory first (a clone's own hooks), then PATH.
    Dir(PathBuf),
    /// PATH only: for files committed and shared with a team (husky), which must not name one
    /// machine's directories.
    Path,
}

impl Hook {
    /// Every hook `bd-sync install` sets up.
    pub const ALL: [Hook; 5] = [Hook::PreCommit, Hook::PostCommit, Hook::PostMerge, Hook::PostRewrite, Hook::PostCheckout];

    /// Hook files a manager may have generated, looked at to detect it.
    pub const MANAGED_BY_MANAGERS: [&'static str; 6] =
        ["pre-commit", "post-commit", "post-merge", "post-rewrite", "post-checkout", "pre-push"];

    /// Git's name for the hook file.
    pub fn file_name(self) -> &'static str {
        match self {
            Hook::PostCommit => "post-commit",
            Hook::PostMerge => "post-merge",
            Hook::PostRewrite => "post-rewrite",
            Hook::PostCheckout => "post-checkout",
            Hook::PreCommit => "pre-commit",
        }
    }

    /// The hook named `name`.
    pub fn from_name(name: &str) -> Option<Hook> {
        Hook::ALL.into_iter().find(|h| h.file_name() == name)
    }

    fn template(self) -> &'static str {
        match self {
            Hook::PostCommit => include_str!("../../hooks/post-commit.sh"),
            Hook::PostMerge | Hook::PostRewrite => include_str!("../../hooks/import-and-notify.sh"),
            Hook::PostCheckout => include_str!("../../hooks/post-checkout.sh"),
            Hook::PreCommit => include_str!("../../hooks/pre-commit.sh"),
        }
    }

    /// The block for this hook.
    pub fn block(self, binaries: &Binaries) -> String {
        let probe = if self == Hook::PostCommit { "bd-hook" } else { "bd-sync" };
        let from_path = format!("beads_git_bin=$(dirname \"$(command -v {probe} 2>/dev/null || echo /nonexistent/x)\")");
        let find = match binaries {
            Binaries::Dir(dir) => {
                format!("  beads_git_bin={}\n  [ -x \"$beads_git_bin/{probe}\" ] || {from_path}", shell_quote(&dir.display().to_string()))
            }
            Binaries::Path => format!("  {from_path}"),
        };
        self.template().replace("@FIND_BINARIES@", &find)
    }
}

/// The directory holding the running executable (where its sibling binaries are installed).
pub fn own_bin_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("finding the running executable")?;
    let exe = fs::canonicalize(&exe).unwrap_or(exe);
    Ok(exe.parent().context("the executable has a directory")?.to_path_buf())
}

fn shell_quote(s: &str) -> String {
    if s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+:@".contains(&b)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// What an install or uninstall did to one file. Shown (and serialised) as its lowercase name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// A new file holding only what we added.
    Created,
    /// Our block or lines were added to an existing file.
    Added,
    /// Our block was replaced by the current one.
    Updated,
    /// Already as it should be.
    Unchanged,
    /// Our block was removed.
    Removed,
    /// The file held only our block and is gone.
    Deleted,
    /// There was nothing of ours.
    Absent,
    /// Not edited, for the reason in the action's warning (a symbolic link we did not create, a
    /// hook in another language): install exits 1 and says what to do by hand.
    Refused,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Change::Created => "created",
            Change::Added => "added",
            Change::Updated => "updated",
            Change::Unchanged => "unchanged",
            Change::Removed => "removed",
            Change::Deleted => "deleted",
            Change::Absent => "absent",
            Change::Refused => "refused",
        })
    }
}

/// The attribute lines `bd-sync install` adds: the issues files go to the field-level driver,
/// bd's append-only logs to the same binary in `--append` mode.
pub const ATTRIBUTE_LINES: &[&str] = &[
    ".beads/issues.jsonl merge=beads",
    ".beads/beads.jsonl merge=beads",
    ".beads/interactions.jsonl merge=beads-append",
    ".beads/deletions.jsonl merge=beads-append",
    ".beads/issues.jsonl diff=beads",
    ".beads/beads.jsonl diff=beads",
];

/// The text conversion git runs to diff the issues files field by field (`diff.beads.textconv`).
pub fn textconv_command(bin_dir: &Path) -> String {
    format!("{} textconv", shell_quote(&bin_dir.join("bd-merge").display().to_string()))
}

/// The merge driver command for git config.
pub fn driver_command(bin_dir: &Path) -> String {
    format!("{} %O %A %B -l %L -p %P -s %S -x %X -y %Y", shell_quote(&bin_dir.join("bd-merge").display().to_string()))
}

/// The append-only merge driver command (`merge.beads-append.driver`).
pub fn append_driver_command(bin_dir: &Path) -> String {
    format!("{} --append %O %A %B -p %P", shell_quote(&bin_dir.join("bd-merge").display().to_string()))
}

/// What install recorded, so uninstall removes exactly that and puts back what it replaced.
/// Paths are relative (to the work tree, or to the git common dir for `info/attributes`): a
/// copied or moved clone must never act on the repository it was copied from.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InstallState {
    /// `merge.beads.driver` before the first install (`None`: unset).
    pub previous_driver: Option<String>,
    /// `merge.beads.name` before the first install.
    pub previous_name: Option<String>,
    /// `merge.beads-append.driver` before it was first installed.
    #[serde(default)]
    pub previous_append_driver: Option<String>,
    /// `merge.beads-append.name` before it was first installed.
    #[serde(default)]
    pub previous_append_name: Option<String>,
    /// The append-only driver was installed (state files of older versions lack it).
    #[serde(default)]
    pub append_driver_installed: bool,
    /// `diff.beads.textconv` before it was first installed.
    #[serde(default)]
    pub previous_textconv: Option<String>,
    /// The diff text conversion was installed (state files of older versions lack it).
    #[serde(default)]
    pub textconv_installed: bool,
    /// The attributes file we touched: `.gitattributes` (work tree) or `info/attributes` (git dir).
    pub attributes_file: Option<String>,
    /// Lines we appended to it.
    pub attribute_lines_added: Vec<String>,
    /// We created the attributes file.
    pub attributes_created: bool,
    /// We added a newline to its last line before appending.
    pub attributes_newline_added: bool,
    /// A hook manager's config file we added our block to, relative to the work tree (UTF-8:
    /// install.json is text, and a path it could not spell exactly would send uninstall to
    /// another file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manager_config: Option<camino::Utf8PathBuf>,
    /// We created that config file.
    #[serde(default)]
    pub manager_config_created: bool,
    /// The hook-type list of that config (pre-commit's `default_install_hook_types`), which install
    /// extended in place: uninstall puts the old lines back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manager_list_edit: Option<managers::ListEdit>,
    /// What the hooks directory held before install first had a manager install hooks for our
    /// jobs: the files of our five hooks the manager had generated, and the `.old` / `.legacy`
    /// copies already there. Uninstall has the manager remove the other hook types (`None`: not
    /// recorded, by an older version, so none is removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manager_hooks_before: Option<Vec<String>>,
}

/// Where the attribute lines live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AttributesFile {
    WorkTree,
    GitDir,
}

impl AttributesFile {
    const WORK_TREE: &'static str = ".gitattributes";
    const GIT_DIR: &'static str = "info/attributes";

    fn key(self) -> &'static str {
        match self {
            AttributesFile::WorkTree => Self::WORK_TREE,
            AttributesFile::GitDir => Self::GIT_DIR,
        }
    }

    /// Reads a recorded location; older versions recorded absolute paths, which are taken for
    /// what they name in *this* repository.
    fn parse(recorded: &str) -> Option<AttributesFile> {
        if recorded.ends_with(Self::GIT_DIR) {
            Some(AttributesFile::GitDir)
        } else if recorded.ends_with(Self::WORK_TREE) {
            Some(AttributesFile::WorkTree)
        } else {
            None
        }
    }

    fn path(self, repo: &Path) -> Result<PathBuf> {
        match self {
            AttributesFile::WorkTree => Ok(toplevel(repo)?.join(Self::WORK_TREE)),
            AttributesFile::GitDir => Ok(common_dir(repo)?.join(Self::GIT_DIR)),
        }
    }
}

/// Install settings.
#[derive(Debug, Clone)]
pub struct InstallOptions {
    /// The repository (any directory inside its work tree).
    pub repo: PathBuf,
    /// Put the attribute lines in `.git/info/attributes` (this clone only), not `.gitattributes`.
    pub local: bool,
    /// Report what would change, change nothing.
    pub dry_run: bool,
    /// Where our binaries are.
    pub bin_dir: PathBuf,
    /// With lefthook: put our jobs in the team's `lefthook.yml` instead of `lefthook-local.yml`.
    pub team: bool,
    /// Write into a hooks directory outside the repository (a global `core.hooksPath`), which
    /// every repository on the machine shares.
    pub shared_hooks_dir: bool,
}

/// One thing install or uninstall looked at.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Action {
    /// What: `merge.beads.driver`, `attributes`, a hook name, or a manager's config.
    pub what: String,
    /// The file or config key.
    pub path: String,
    /// What happened.
    pub change: Change,
    /// Something the user should act on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

impl Action {
    fn new(what: &str, path: &Path, change: Change) -> Action {
        Action { what: what.to_owned(), path: path.display().to_string(), change, warning: None }
    }
}

/// Install could not finish safely; nothing after the point named was changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallRefusal {
    /// A manager's config must be edited by hand; the snippet says what to add.
    ManualEdit(managers::ManualEdit),
    /// The hooks directory is shared by every repository on the machine.
    SharedHooksDir(PathBuf),
}

impl std::fmt::Display for InstallRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InstallRefusal::ManualEdit(m) => write!(
                f,
                "{} was not edited: {}.\nAdd this to it (then run `bd-sync install` again to check):\n\n{}",
                m.file.display(),
                m.reason,
                m.snippet
            ),
            InstallRefusal::SharedHooksDir(dir) => write!(
                f,
                "git runs this repository's hooks from {}, outside the repository (a global core.hooksPath): \
                 every repository on this machine shares it, so install does not write there. Pass \
                 --shared-hooks-dir to install into it anyway, or set a hooks directory for this \
                 repository only: git config --local core.hooksPath .git/hooks",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for InstallRefusal {}

fn common_dir(repo: &Path) -> Result<PathBuf> {
    Ok(PathBuf::from(git(repo, &["rev-parse", "--path-format=absolute", "--git-common-dir"])?))
}

fn state_path(repo: &Path) -> Result<PathBuf> {
    Ok(common_dir(repo)?.join("beads").join("install.json"))
}

fn read_state(repo: &Path) -> Result<Option<InstallState>> {
    let path = state_path(repo)?;
    match read_optional(&path)? {
        Some(bytes) => Ok(Some(serde_json::from_slice(&bytes).with_context(|| format!("reading {}", path.display()))?)),
        None => Ok(None),
    }
}

fn write_state(repo: &Path, state: &InstallState) -> Result<()> {
    let path = state_path(repo)?;
    let dir = path.parent().context("install.json has a directory")?;
    crate::safe_fs::refuse_symlink(dir)?;
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    crate::safe_fs::refuse_non_regular(&path)?;
    let json = serde_json::to_vec_pretty(state).context("serialising the install record")?;
    crate::jsonl::write_atomic(&path, &json)
}

/// Keeps `install.json` ahead of every change: what install is about to replace is recorded
/// before it is replaced, so a failure part way leaves a record `bd-sync uninstall` can undo.
struct Recorder<'a> {
    repo: &'a Path,
    dry_run: bool,
    saved: Option<InstallState>,
}

impl Recorder<'_> {
    fn save(&mut self, state: &InstallState) -> Result<()> {
        if !self.dry_run && self.saved.as_ref() != Some(state) {
            write_state(self.repo, state)?;
            self.saved = Some(state.clone());
        }
        Ok(())
    }
}

fn config_get(repo: &Path, key: &str) -> Option<String> {
    git(repo, &["config", "--local", "--get", key]).ok()
}

fn toplevel(repo: &Path) -> Result<PathBuf> {
    Ok(PathBuf::from(git(repo, &["rev-parse", "--show-toplevel"])?))
}

/// The directory git runs hooks from (`core.hooksPath`, a worktree's common dir, a submodule's
/// own git dir).
pub fn hooks_dir(repo: &Path) -> Result<PathBuf> {
    Ok(PathBuf::from(git(repo, &["rev-parse", "--path-format=absolute", "--git-path", "hooks"])?))
}

/// Who runs this repository's hooks.
pub fn manager(repo: &Path) -> Result<Manager> {
    Ok(managers::detect(&toplevel(repo)?, &hooks_dir(repo)?))
}

/// Installs the block of one hook where `install` would put it (`bd-hook --install-git-hook`).
pub fn install_one(repo: &Path, hook: Hook, bin_dir: &Path) -> Result<(PathBuf, Change)> {
    let (path, binaries, mode) = match manager(repo)? {
        Manager::Plain => (hooks_dir(repo)?.join(hook.file_name()), Binaries::Dir(bin_dir.to_path_buf()), ModePolicy::Executable),
        Manager::Husky { dir } => (dir.join(hook.file_name()), Binaries::Path, ModePolicy::Any),
        other => bail!("{} runs this repository's hooks: use `bd-sync install`, which adds our jobs to its config", other.name()),
    };
    let action = install_hook_file(repo, &path, hook, &binaries, mode, false)?;
    match (action.change, action.warning) {
        (Change::Refused, Some(why)) => bail!("{why}"),
        (change, _) => Ok((path, change)),
    }
}

/// Removes the block of one hook from where `install_one` puts it.
pub fn uninstall_one(repo: &Path, hook: Hook) -> Result<(PathBuf, Change)> {
    let path = match manager(repo)? {
        Manager::Husky { dir } => dir.join(hook.file_name()),
        _ => hooks_dir(repo)?.join(hook.file_name()),
    };
    let change = match hook_target(&path, repo)? {
        Ok(target) => uninstall_block(&target, false)?,
        Err(why) => bail!("{why}"),
    };
    Ok((path, change))
}

fn inside(path: &Path, dir: &Path) -> bool {
    let canon = |p: &Path| fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canon(path).starts_with(canon(dir))
}

/// True when `dir` is neither in the work tree nor in the repository's git dir.
fn outside_repository(repo: &Path, dir: &Path) -> Result<bool> {
    Ok(!inside(dir, &toplevel(repo)?)
        && !inside(dir, &common_dir(repo)?)
        && !inside(dir, &PathBuf::from(git(repo, &["rev-parse", "--absolute-git-dir"])?)))
}

/// What [`install`] came to: done (each file's [`Action`]), or refused before it could finish
/// safely (the caller reports the refusal and exits 1; nothing after the point named changed).
#[derive(Debug)]
pub enum InstallOutcome {
    /// Installed; an action may still be [`Change::Refused`] (a file left for the user).
    Installed(Vec<Action>),
    /// Stopped where a file must be edited by hand or the hooks directory is shared.
    Refused(InstallRefusal),
}

/// Sets up the merge driver, the attribute lines and our hooks. A refusal is an outcome
/// ([`InstallOutcome::Refused`]), never an error.
///
/// A file install must not edit (a symbolic link it did not create, a hook in another language)
/// is an action with [`Change::Refused`] and a warning saying what to do; everything else is
/// still installed, and the caller exits 1. A failure part way leaves `install.json` recording
/// what was changed so far, for `bd-sync uninstall`.
pub fn install(options: &InstallOptions) -> Result<InstallOutcome> {
    match install_steps(options) {
        Ok(actions) => Ok(InstallOutcome::Installed(actions)),
        // The one place a refusal raised deep in the steps becomes the outcome it is.
        Err(e) => match e.downcast::<InstallRefusal>() {
            Ok(refusal) => Ok(InstallOutcome::Refused(refusal)),
            Err(e) => Err(e),
        },
    }
}

fn install_steps(options: &InstallOptions) -> Result<Vec<Action>> {
    let repo = &options.repo;
    let top = toplevel(repo)?;
    let hooks = hooks_dir(repo)?;
    let manager = managers::detect(&top, &hooks);
    if matches!(manager, Manager::Plain | Manager::Husky { .. }) && !options.shared_hooks_dir && outside_repository(repo, &hooks)? {
        return Err(InstallRefusal::SharedHooksDir(hooks).into());
    }
    let prior = read_state(repo)?;
    let mut state = prior.clone().unwrap_or_default();
    let mut recorder = Recorder { repo, dry_run: options.dry_run, saved: prior.clone() };
    let mut actions = Vec::new();
    let steps = (|| -> Result<()> {
        install_driver(options, prior.is_none(), &mut state, &mut recorder, &mut actions)?;
        install_attributes(options, &mut state, &mut recorder, &mut actions)?;
        install_hooks(options, &top, &hooks, &manager, &mut state, &mut recorder, &mut actions)?;
        recorder.save(&state)
    })();
    match steps {
        Err(e) if e.downcast_ref::<InstallRefusal>().is_none() && recorder.saved.is_some() && !options.dry_run => Err(e.context(
            "install stopped part way; what it changed so far is recorded, and `bd-sync uninstall` undoes it \
             (or fix the cause and run `bd-sync install` again)",
        )),
        other => other.map(|()| {
            if !top.join(".beads").is_dir() {
                // Run where a newcomer naturally runs it (the beads-git clone, a repository
                // without a tracker), install would otherwise set that repository up in silence.
                let mut action = Action::new(".beads", &top.join(".beads"), Change::Absent);
                action.warning = Some(format!(
                    "{} has no .beads/ directory (no beads tracker here): the driver and hooks do nothing until one exists (`bd init` or `br init`); \
                     if you meant another repository, `bd-sync uninstall` undoes this and `bd-sync install -C DIR` sets up that one",
                    top.display()
                ));
                actions.insert(0, action);
            }
            actions
        }),
    }
}

fn install_driver(
    options: &InstallOptions,
    first_install: bool,
    state: &mut InstallState,
    recorder: &mut Recorder<'_>,
    actions: &mut Vec<Action>,
) -> Result<()> {
    let repo = &options.repo;
    let want_driver = driver_command(&options.bin_dir);
    let want_append = append_driver_command(&options.bin_dir);
    let want_textconv = textconv_command(&options.bin_dir);
    let first_append = !state.append_driver_installed;
    state.append_driver_installed = true;
    let first_textconv = !state.textconv_installed;
    state.textconv_installed = true;
    let mut wanted = Vec::new();
    for (key, want, previous, first) in [
        ("merge.beads.driver", want_driver.as_str(), &mut state.previous_driver, first_install),
        ("merge.beads.name", "beads JSONL merge (bd-merge)", &mut state.previous_name, first_install),
        ("merge.beads-append.driver", want_append.as_str(), &mut state.previous_append_driver, first_append),
        ("merge.beads-append.name", "beads append-only log merge (bd-merge --append)", &mut state.previous_append_name, first_append),
        ("diff.beads.textconv", want_textconv.as_str(), &mut state.previous_textconv, first_textconv),
    ] {
        let current = config_get(repo, key);
        if first {
            *previous = current.clone();
        }
        wanted.push((key, want.to_owned(), current));
    }
    // Every value about to be replaced is on record before the first is replaced.
    recorder.save(state)?;
    for (key, want, current) in wanted {
        let change = if current.as_deref() == Some(want.as_str()) {
            Change::Unchanged
        } else {
            if !options.dry_run {
                git(repo, &["config", "--local", "--end-of-options", key, &want])?;
            }
            if current.is_some() {
                Change::Updated
            } else {
                Change::Added
            }
        };
        actions.push(Action { what: key.into(), path: key.into(), change, warning: None });
    }
    Ok(())
}

/// A refused action: the file is named, with why and what to do.
fn refused(what: &str, path: &Path, why: String) -> Action {
    Action { what: what.to_owned(), path: path.display().to_string(), change: Change::Refused, warning: Some(why) }
}

fn install_attributes(
    options: &InstallOptions,
    state: &mut InstallState,
    recorder: &mut Recorder<'_>,
    actions: &mut Vec<Action>,
) -> Result<()> {
    let location = if options.local { AttributesFile::GitDir } else { AttributesFile::WorkTree };
    let attr_path = location.path(&options.repo)?;
    let existing = match read_optional(&attr_path) {
        Ok(e) => e,
        Err(e) if is_refusal(&e) => {
            actions.push(refused("attributes", &attr_path, format!("{e:#}; the attribute lines were not added")));
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let content = existing.clone().unwrap_or_default();
    let text = String::from_utf8_lossy(&content);
    let missing: Vec<&str> = ATTRIBUTE_LINES.iter().copied().filter(|l| !text.lines().any(|x| x.trim() == *l)).collect();
    let change = if missing.is_empty() {
        Change::Unchanged
    } else {
        let mut new = content.clone();
        let newline_added = !new.is_empty() && !new.ends_with(b"\n");
        if newline_added {
            new.push(b'\n');
        }
        for l in &missing {
            new.extend_from_slice(l.as_bytes());
            new.push(b'\n');
        }
        state.attributes_file = Some(location.key().to_owned());
        state.attribute_lines_added.extend(missing.iter().map(std::string::ToString::to_string));
        state.attributes_created |= existing.is_none();
        state.attributes_newline_added |= newline_added;
        recorder.save(state)?;
        if !options.dry_run {
            if let Some(dir) = attr_path.parent() {
                fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            crate::jsonl::write_atomic(&attr_path, &new)?;
        }
        if existing.is_none() {
            Change::Created
        } else {
            Change::Added
        }
    };
    let mut action = Action::new("attributes", &attr_path, change);
    if location == AttributesFile::WorkTree && action.change != Change::Unchanged {
        action.warning = Some(format!("commit {} so teammates' clones merge issues with bd-merge too", attr_path.display()));
    }
    actions.push(action);
    if !options.dry_run {
        actions.extend(overridden_attributes(&options.repo, &attr_path)?);
    }
    Ok(())
}

/// A refusal for each issues file whose `merge` attribute is still not ours after install wrote
/// its lines, naming the file and line that outranks them (install does not edit another
/// attributes file: the line may be there on purpose).
fn overridden_attributes(repo: &Path, ours: &Path) -> Result<Vec<Action>> {
    let top = toplevel(repo)?;
    let git_dir = common_dir(repo)?;
    let mut out = Vec::new();
    for rel in crate::jsonl::ISSUES_PATHS {
        if git(&top, &["check-attr", "merge", "--", rel])?.ends_with(": beads") {
            continue;
        }
        let why = match attr_source::merge_source(&top, &git_dir, rel) {
            Some(src) => format!(
                "{}:{} sets {} for {rel}, and outranks our line in {}: remove that line (install does not edit it), then run `bd-sync install` again",
                src.file.display(),
                src.line,
                src.setting,
                ours.display()
            ),
            None => format!("git does not route {rel} to merge=beads although {} says so; see `git check-attr -a -- {rel}`", ours.display()),
        };
        out.push(refused("attributes", ours, why));
    }
    Ok(out)
}

/// What a finding says about an issues file that is not routed to the driver: the line that
/// decides otherwise, when there is one, and the command that fixes it.
pub(crate) fn attribute_missing_message(top: &Path, rel: &str) -> String {
    let source = common_dir(top).ok().and_then(|git_dir| attr_source::merge_source(top, &git_dir, rel));
    match source {
        Some(src) if src.setting != "merge=beads" => format!(
            "{rel} is not merged with merge=beads: {}:{} sets {} for it (it outranks the lines install writes); remove that line, then run `bd-sync install`",
            src.file.display(),
            src.line,
            src.setting
        ),
        _ => format!("{rel} is not merged with merge=beads: run `bd-sync install`"),
    }
}

/// A file we manage, read as the repository may be hostile: never through a symlink, never a
/// FIFO or device, never more than [`crate::safe_fs::SMALL_FILE_LIMIT`].
fn read_optional(path: &Path) -> Result<Option<Vec<u8>>> {
    Ok(crate::safe_fs::read_regular(path, crate::safe_fs::SMALL_FILE_LIMIT)?)
}

/// Whether an error is a file we must not touch (a symlink, not a regular file, too large).
fn is_refusal(e: &anyhow::Error) -> bool {
    e.downcast_ref::<crate::safe_fs::FileError>().is_some_and(|f| !matches!(f, crate::safe_fs::FileError::Io { .. }))
}

/// Where a hook's content lives. A hook file that is a symbolic link (a team's
/// `.git/hooks/pre-commit -> ../../scripts/pre-commit`) is edited through its target when that
/// is a regular file inside the repository (the work tree or the git dir), so the link stays a
/// link; a link out of the repository, or to anything else, is not ours to edit.
pub(crate) fn hook_target(path: &Path, repo: &Path) -> Result<std::result::Result<PathBuf, String>> {
    let Ok(meta) = fs::symlink_metadata(path) else { return Ok(Ok(path.to_path_buf())) };
    if !meta.file_type().is_symlink() {
        if meta.is_file() {
            return Ok(Ok(path.to_path_buf()));
        }
        return Ok(Err(format!("{} is not a regular file, so install does not edit it", path.display())));
    }
    let link = fs::read_link(path).unwrap_or_default();
    let bounds = [toplevel(repo)?, common_dir(repo)?, PathBuf::from(git(repo, &["rev-parse", "--absolute-git-dir"])?)];
    match fs::canonicalize(path) {
        Ok(target) if target.is_file() && bounds.iter().any(|b| inside(&target, b)) => Ok(Ok(target)),
        _ => Ok(Err(format!(
            "{} is a symbolic link to {}, which is not a regular file inside this repository; install does not follow it. \
             Add our block to that file yourself if you own it (see `bd-sync hook --help`), or replace the link with a file",
            path.display(),
            crate::record::printable(&link.display().to_string(), 400)
        ))),
    }
}

/// Every place an earlier install (or a manager renaming our files) may have left a block that
/// git no longer runs: the default and current hooks dirs, their `*.old` / `*.legacy` renames.
/// Callers leave out the files where blocks belong now.
fn stray_block_files(repo: &Path, hooks: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs = vec![hooks.to_path_buf(), common_dir(repo)?.join("hooks")];
    dirs.dedup();
    let mut out = Vec::new();
    for dir in dirs {
        for hook in Hook::ALL {
            for suffix in ["", ".old", ".legacy"] {
                let path = dir.join(format!("{}{suffix}", hook.file_name()));
                let Ok(target) = hook_target(&path, repo)? else { continue };
                let holds_block = read_optional(&target).ok().flatten().is_some_and(|c| block::find_block(&c).is_some());
                if holds_block && !out.contains(&path) {
                    out.push(path);
                }
            }
        }
    }
    Ok(out)
}

/// Puts our block into one hook file, through a symlink that stays inside the repository; a hook
/// in another language is left byte-identical and refused with the line its owner can add.
fn install_hook_file(repo: &Path, path: &Path, hook: Hook, binaries: &Binaries, mode: ModePolicy, dry_run: bool) -> Result<Action> {
    let target = match hook_target(path, repo)? {
        Ok(t) => t,
        Err(why) => return Ok(refused(hook.file_name(), path, why)),
    };
    let content = match read_optional(&target) {
        Ok(c) => c,
        Err(e) if is_refusal(&e) => return Ok(refused(hook.file_name(), path, format!("{e:#}"))),
        Err(e) => return Err(e),
    };
    if let Some(content) = content.as_deref().filter(|c| !block::runs_posix_shell(c)) {
        if block::calls_our_entry_point(content, hook.file_name()) {
            return Ok(Action::new(hook.file_name(), path, Change::Unchanged));
        }
        return Ok(refused(hook.file_name(), path, foreign_hook_advice(path, hook, content)));
    }
    Ok(Action::new(hook.file_name(), path, install_block(&target, &hook.block(binaries), mode, dry_run)?))
}

/// What to add to a hook written for another interpreter, which our sh block would break.
fn foreign_hook_advice(path: &Path, hook: Hook, content: &[u8]) -> String {
    let interpreter = block::interpreter(content).unwrap_or_default();
    let name = hook.file_name();
    let call = match interpreter.as_str() {
        i if i.starts_with("python") => {
            format!("import subprocess, sys; subprocess.call([\"bd-sync\", \"hook\", \"{name}\", *sys.argv[1:]], stdin=subprocess.DEVNULL)")
        }
        "node" | "deno" | "bun" => format!(
            "require(\"child_process\").spawnSync(\"bd-sync\", [\"hook\", \"{name}\", ...process.argv.slice(2)], {{ stdio: [\"ignore\", \"inherit\", \"inherit\"] }});"
        ),
        _ => format!("run `bd-sync hook {name} <the hook's arguments>` with stdin from /dev/null"),
    };
    format!(
        "{} is a {} hook, and our block is POSIX sh: it was left byte-identical. To run beads-git's {name} step, make it \
         call `bd-sync hook {name}` with the hook's arguments near its start (that always exits 0 and never reads stdin), \
         e.g.\n    {call}\nthen run `bd-sync install` again to check",
        path.display(),
        crate::record::printable(&interpreter, 80)
    )
}

fn install_hooks(
    options: &InstallOptions,
    top: &Path,
    hooks: &Path,
    manager: &Manager,
    state: &mut InstallState,
    recorder: &mut Recorder<'_>,
    actions: &mut Vec<Action>,
) -> Result<()> {
    let repo = &options.repo;
    // Blocks git no longer runs (a manager arrived after us, or renamed our files) move to where
    // hooks run now: take them out first.
    let targets: Vec<PathBuf> = match manager {
        Manager::Plain => Hook::ALL.iter().map(|h| hooks.join(h.file_name())).collect(),
        Manager::Husky { dir } => Hook::ALL.iter().map(|h| dir.join(h.file_name())).collect(),
        _ => Vec::new(),
    };
    for stray in stray_block_files(repo, hooks)?.into_iter().filter(|p| !targets.contains(p)) {
        let name = stray.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match hook_target(&stray, repo)? {
            Ok(target) => actions.push(Action::new(&name, &stray, uninstall_block(&target, options.dry_run)?)),
            Err(why) => actions.push(refused(&name, &stray, why)),
        }
    }
    match manager {
        Manager::Plain => {
            for hook in Hook::ALL {
                let path = hooks.join(hook.file_name());
                let binaries = Binaries::Dir(options.bin_dir.clone());
                let mut action = install_hook_file(repo, &path, hook, &binaries, ModePolicy::Executable, options.dry_run)?;
                if !options.dry_run && action.change == Change::Added && !block::is_executable(&path) {
                    action.warning =
                        Some(format!("{} is not executable, so git skips it (and our block): chmod +x it to enable it", path.display()));
                }
                actions.push(action);
            }
        }
        Manager::Husky { dir } => {
            let mut changed = Vec::new();
            for hook in Hook::ALL {
                let path = dir.join(hook.file_name());
                let action = install_hook_file(repo, &path, hook, &Binaries::Path, ModePolicy::Any, options.dry_run)?;
                if !matches!(action.change, Change::Unchanged | Change::Refused) {
                    changed.push(path.strip_prefix(top).unwrap_or(&path).display().to_string());
                }
                actions.push(action);
            }
            if let (false, Some(last)) = (changed.is_empty(), actions.last_mut()) {
                last.warning =
                    Some(format!("husky's hook files are shared: commit {} (they call bd-sync and bd-hook from PATH)", changed.join(" ")));
            }
        }
        Manager::Lefthook { main } => {
            let path = if options.team {
                main.clone().unwrap_or_else(|| top.join("lefthook.yml"))
            } else {
                managers::lefthook_local_path(top, main.as_deref())
            };
            install_config(options, top, &path, state, recorder, actions, |p, c| {
                managers::lefthook_with_block(p, c).map(|content| managers::Edited { content, list: None })
            })?;
            record_manager_hooks(hooks, "lefthook", state, recorder)?;
            run_manager_install(options, top, hooks, "lefthook", &["install"], actions);
        }
        Manager::PreCommit { config } => {
            install_config(options, top, config, state, recorder, actions, managers::pre_commit_with_block)?;
            record_manager_hooks(hooks, "pre-commit", state, recorder)?;
            run_manager_install(options, top, hooks, "pre-commit", &["install"], actions);
        }
    }
    Ok(())
}

type ConfigEdit = fn(&Path, &str) -> Result<managers::Edited, managers::ManualEdit>;

fn install_config(
    options: &InstallOptions,
    top: &Path,
    path: &Path,
    state: &mut InstallState,
    recorder: &mut Recorder<'_>,
    actions: &mut Vec<Action>,
    edit: ConfigEdit,
) -> Result<()> {
    let existing = match read_optional(path) {
        Ok(e) => e,
        Err(e) if is_refusal(&e) => {
            actions.push(refused("hook manager config", path, format!("{e:#}; our jobs were not added")));
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let text = String::from_utf8(existing.clone().unwrap_or_default()).with_context(|| format!("{} is not UTF-8", path.display()))?;
    let edited = edit(path, &text).map_err(InstallRefusal::ManualEdit)?;
    let new = edited.content;
    let change = match &existing {
        None => Change::Created,
        Some(old) if *old == new.as_bytes() => Change::Unchanged,
        Some(old) if block::find_block(old).is_some() => Change::Updated,
        Some(_) => Change::Added,
    };
    let relative = camino::Utf8PathBuf::try_from(path.strip_prefix(top).unwrap_or(path).to_path_buf())
        .map_err(|e| anyhow::anyhow!("{} is not UTF-8, and install.json records paths as UTF-8 text", e.into_path_buf().display()))?;
    if state.manager_config.as_ref() != Some(&relative) {
        state.manager_config = Some(relative);
        state.manager_config_created = existing.is_none();
    }
    let list_action = edited.list.map(|edit| {
        let mut action = Action::new("default_install_hook_types", path, Change::Added);
        action.warning = Some(format!(
            "added {} to default_install_hook_types in {} (pre-commit installs those hook types for our jobs; uninstall takes them out)",
            edit.added.join(", "),
            path.display()
        ));
        // A list extended twice (an item removed by hand, install run again) is undone in one go.
        state.manager_list_edit = Some(match state.manager_list_edit.take() {
            Some(old) if old.after == edit.before => {
                managers::ListEdit { before: old.before, after: edit.after, added: [old.added, edit.added].concat() }
            }
            _ => edit,
        });
        action
    });
    recorder.save(state)?;
    if change != Change::Unchanged && !options.dry_run {
        crate::jsonl::write_atomic(path, new.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    }
    actions.push(Action::new("hook manager config", path, change));
    actions.extend(list_action);
    Ok(())
}

/// The files of our hooks in `hooks` that `manager` generated, and the `.old` / `.legacy` copies
/// there: what [`InstallState::manager_hooks_before`] records.
fn manager_hook_files(hooks: &Path, manager: &str) -> Vec<String> {
    let mut out = Vec::new();
    for hook in Hook::ALL {
        let name = hook.file_name();
        if read_optional(&hooks.join(name)).ok().flatten().and_then(|c| managers::generated_by(&c)) == Some(manager) {
            out.push(name.to_owned());
        }
        for copy in [format!("{name}.old"), format!("{name}.legacy")] {
            if fs::symlink_metadata(hooks.join(&copy)).is_ok() {
                out.push(copy);
            }
        }
    }
    out
}

/// Records what the hooks directory held before the manager first installs hook types for us.
fn record_manager_hooks(hooks: &Path, manager: &str, state: &mut InstallState, recorder: &mut Recorder<'_>) -> Result<()> {
    if state.manager_hooks_before.is_none() {
        state.manager_hooks_before = Some(manager_hook_files(hooks, manager));
        recorder.save(state)?;
    }
    Ok(())
}

/// Uninstall's half of [`record_manager_hooks`]: the hook types the manager installed only for
/// our jobs go, the way the manager itself removes them, so the hooks directory is as it was.
fn uninstall_manager_hooks(top: &Path, hooks: &Path, manager: &Manager, before: &[String], dry_run: bool, actions: &mut Vec<Action>) {
    let name = manager.name();
    let ours: Vec<&str> = Hook::ALL
        .iter()
        .map(|h| h.file_name())
        .filter(|h| !before.iter().any(|b| b == h))
        .filter(|h| read_optional(&hooks.join(h)).ok().flatten().and_then(|c| managers::generated_by(&c)) == Some(name))
        .collect();
    if ours.is_empty() {
        return;
    }
    let (program_args, removed_here): (Vec<String>, bool) = match manager {
        // pre-commit removes its hook files and puts back the `.legacy` copy it made of a hook
        // that was there before.
        Manager::PreCommit { .. } => {
            (["uninstall"].into_iter().chain(ours.iter().flat_map(|t| ["-t", t])).map(String::from).collect(), false)
        }
        // lefthook has no command to remove one hook type: its stubs for our hooks are removed
        // here (and a `.old` copy lefthook made for them put back), then `lefthook install`
        // re-creates those its remaining config still needs.
        Manager::Lefthook { .. } => (vec!["install".to_owned()], true),
        _ => return,
    };
    let command = format!("{name} {}", program_args.join(" "));
    let mut action = Action { what: format!("{name} hook types"), path: ours.join(" "), change: Change::Removed, warning: None };
    if dry_run {
        actions.push(action);
        return;
    }
    let program = manager_program(top, hooks, name);
    if program.is_none() && !removed_here {
        action.change = Change::Refused;
        action.warning = Some(format!(
            "{name} is not on PATH: remove the hook types it installed for our jobs ({}) from {} yourself",
            ours.join(", "),
            hooks.display()
        ));
        actions.push(action);
        return;
    }
    if removed_here {
        for hook in &ours {
            let path = hooks.join(hook);
            if let Err(e) = fs::remove_file(&path) {
                action.warning = Some(format!("could not remove {}: {e}", path.display()));
            }
            let old = hooks.join(format!("{hook}.old"));
            if !before.iter().any(|b| *b == format!("{hook}.old")) && fs::symlink_metadata(&old).is_ok() {
                if let Err(e) = fs::rename(&old, &path) {
                    action.warning = Some(format!("could not move {} back to {}: {e}", old.display(), path.display()));
                }
            }
        }
    }
    // lefthook's stubs for our types are gone already; its install only re-creates what its
    // remaining config needs, which it had before ours, so without the program nothing is left.
    let Some(program) = program else {
        actions.push(action);
        return;
    };
    let out = std::process::Command::new(&program).args(&program_args).current_dir(top).stdin(std::process::Stdio::null()).output();
    let failed = match out {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!("`{command}` failed: {}", String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => Some(format!("could not run `{command}`: {e}")),
    };
    if let Some(why) = failed {
        action.change = Change::Refused;
        action.warning = Some(format!("{why}; remove the hook types {name} installed for our jobs ({}) yourself", ours.join(", ")));
    }
    actions.push(action);
}

/// Finds a manager's executable, never inside the repository (a committed
/// `node_modules/.bin/lefthook` is code from whoever wrote the repository): on PATH (entries that
/// are relative or lie inside the work tree are skipped); for lefthook, else `$LEFTHOOK_BIN` (the
/// variable its own hook files honour), else the absolute path of the lefthook that wrote the hook
/// files already in `hooks` (a lefthook installed with npm is run through `npx` and is on no
/// PATH; its hook files name the binary), when `hooks` is in the git dir or outside the work tree
/// (never a committed hooks directory).
fn manager_program(top: &Path, hooks: &Path, name: &str) -> Option<PathBuf> {
    let usable = |p: &Path| p.is_absolute() && !inside(p, top) && p.is_file();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut on_path = std::env::split_paths(&path).filter(|d| d.is_absolute() && !inside(d, top)).map(|d| d.join(name));
    if let Some(found) = on_path.find(|p| p.is_file()) {
        return Some(found);
    }
    if name != "lefthook" {
        return None;
    }
    if let Some(bin) = std::env::var_os("LEFTHOOK_BIN").map(PathBuf::from).filter(|p| usable(p)) {
        return Some(bin);
    }
    let in_git_dir = common_dir(top).is_ok_and(|git| inside(hooks, &git));
    if inside(hooks, top) && !in_git_dir {
        return None;
    }
    Hook::ALL.iter().filter_map(|h| read_optional(&hooks.join(h.file_name())).ok().flatten()).find_map(|content| {
        if managers::generated_by(&content) != Some("lefthook") {
            return None;
        }
        managers::lefthook_binary_in_hook(&String::from_utf8_lossy(&content)).map(PathBuf::from).filter(|p| usable(p))
    })
}

/// Lets the manager (re)generate its hook files, so the hook types our jobs need exist.
fn run_manager_install(options: &InstallOptions, top: &Path, hooks: &Path, name: &str, args: &[&str], actions: &mut Vec<Action>) {
    if options.dry_run {
        return;
    }
    let command = format!("{name} {}", args.join(" "));
    let warning = match manager_program(top, hooks, name) {
        None => Some(format!("{name} is not on PATH: run `{command}` so git runs our jobs")),
        Some(program) => {
            let out = std::process::Command::new(&program).args(args).current_dir(top).stdin(std::process::Stdio::null()).output();
            match out {
                Ok(o) if o.status.success() => None,
                Ok(o) => Some(format!("`{command}` failed: {}", String::from_utf8_lossy(&o.stderr).trim())),
                Err(e) => Some(format!("could not run `{command}`: {e}")),
            }
        }
    };
    actions.push(Action {
        what: name.to_owned(),
        path: command,
        change: if warning.is_some() { Change::Absent } else { Change::Unchanged },
        warning,
    });
}

/// Removes exactly what install added and puts back what it replaced, in this repository only.
/// Committed files teammates rely on (the `.gitattributes` lines that route the issues file to
/// the driver, a committed hook manager config) are kept unless `team` is set: removing them
/// turns beads-git off for everyone who pulls that commit. What was kept stays recorded, so a
/// later `uninstall --team` can still take it out.
pub fn uninstall(repo: &Path, dry_run: bool, team: bool) -> Result<Vec<Action>> {
    let state = read_state(repo)?;
    let top = toplevel(repo)?;
    let hooks = hooks_dir(repo)?;
    let mut actions = Vec::new();
    let manager = managers::detect(&top, &hooks);
    let mut files: Vec<PathBuf> = stray_block_files(repo, &hooks)?;
    if let Manager::Husky { dir } = &manager {
        files.extend(Hook::ALL.iter().map(|h| dir.join(h.file_name())));
    }
    for path in files {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match hook_target(&path, repo)? {
            Ok(target) => actions.push(Action::new(&name, &path, uninstall_block(&target, dry_run)?)),
            Err(why) => actions.push(refused(&name, &path, why)),
        }
    }
    let Some(state) = state else {
        return Ok(actions);
    };
    // What stays for the team, and stays recorded for `uninstall --team`.
    let mut kept = InstallState::default();
    if let Some(rel) = &state.manager_config {
        let path = top.join(rel);
        if !team && committed_holding(&top, &path, block::BEGIN) {
            actions.push(kept_for_team("hook manager config", &top, &path, "the team's hook manager runs our jobs from it in every clone"));
            kept.manager_config = state.manager_config.clone();
            kept.manager_config_created = state.manager_config_created;
            kept.manager_list_edit = state.manager_list_edit.clone();
        } else {
            uninstall_manager_config(&path, &state, dry_run, &mut actions)?;
        }
    }
    if let Some(before) = &state.manager_hooks_before {
        uninstall_manager_hooks(&top, &hooks, &manager, before, dry_run, &mut actions);
    }
    uninstall_git_config(repo, &state, dry_run, &mut actions)?;
    if let Some(location) = state.attributes_file.as_deref().and_then(AttributesFile::parse) {
        let path = location.path(repo)?;
        if !team && location == AttributesFile::WorkTree && committed_holding(&top, &path, " merge=beads") {
            let why = "teammates' clones route the issues file to the field-level driver through its merge=beads lines";
            actions.push(kept_for_team("attributes", &top, &path, why));
            kept.attributes_file = state.attributes_file.clone();
            kept.attribute_lines_added = state.attribute_lines_added.clone();
            kept.attributes_created = state.attributes_created;
            kept.attributes_newline_added = state.attributes_newline_added;
        } else {
            actions.extend(uninstall_attributes(repo, &top, location, &state, dry_run)?);
        }
    }
    if !dry_run {
        if kept.attributes_file.is_some() || kept.manager_config.is_some() {
            write_state(repo, &kept)?;
        } else {
            let _ = fs::remove_file(state_path(repo)?);
        }
    }
    Ok(actions)
}

/// A committed file uninstall leaves as it is for the team, saying what removing it would do.
fn kept_for_team(what: &str, top: &Path, path: &Path, why: &str) -> Action {
    let rel = path.strip_prefix(top).unwrap_or(path).display().to_string();
    let mut action = Action::new(what, path, Change::Unchanged);
    action.warning = Some(format!(
        "{rel} is committed and kept: {why}. Removing our lines from it turns beads-git off for everyone who pulls that commit; \
         if the team agrees, run `bd-sync uninstall --team` and commit {rel}"
    ));
    action
}

/// Takes our block out of a hook manager's config (deleting a file install created that holds
/// nothing else), and puts back a hook-type list install extended.
fn uninstall_manager_config(path: &Path, state: &InstallState, dry_run: bool, actions: &mut Vec<Action>) -> Result<()> {
    let path = path.to_path_buf();
    if let Some(content) = read_optional(&path)? {
        let without = block::without_block(&content);
        let had_block = without.is_some();
        let mut rest = without.unwrap_or_else(|| content.clone());
        let mut list_action = None;
        if let Some(list) = &state.manager_list_edit {
            let found: Vec<usize> = memchr::memmem::find_iter(&rest, list.after.as_bytes()).collect();
            list_action = Some(match found.as_slice() {
                [at] => {
                    rest.splice(*at..*at + list.after.len(), list.before.bytes());
                    Action::new("default_install_hook_types", &path, Change::Removed)
                }
                _ => refused(
                    "default_install_hook_types",
                    &path,
                    format!(
                        "{} changed since install added {} to its default_install_hook_types; take them out yourself if they are only there for beads-git",
                        path.display(),
                        list.added.join(", ")
                    ),
                ),
            });
        }
        let change = match () {
            () if !had_block && list_action.as_ref().is_none_or(|a| a.change != Change::Removed) => Change::Absent,
            () if rest.is_empty() && state.manager_config_created => {
                if !dry_run {
                    fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
                }
                Change::Deleted
            }
            () => {
                if !dry_run {
                    crate::jsonl::write_atomic(&path, &rest)?;
                }
                Change::Removed
            }
        };
        actions.push(Action::new("hook manager config", &path, change));
        actions.extend(list_action);
    }
    Ok(())
}

/// Puts back (or unsets) the git config values install set, and drops sections left empty.
fn uninstall_git_config(repo: &Path, state: &InstallState, dry_run: bool, actions: &mut Vec<Action>) -> Result<()> {
    let mut keys = vec![("merge.beads.driver", &state.previous_driver), ("merge.beads.name", &state.previous_name)];
    if state.append_driver_installed {
        keys.extend([
            ("merge.beads-append.driver", &state.previous_append_driver),
            ("merge.beads-append.name", &state.previous_append_name),
        ]);
    }
    if state.textconv_installed {
        keys.push(("diff.beads.textconv", &state.previous_textconv));
    }
    for (key, previous) in keys {
        let change = match previous {
            Some(v) => {
                if !dry_run {
                    git(repo, &["config", "--local", "--end-of-options", key, v])?;
                }
                Change::Updated
            }
            None => {
                if !dry_run {
                    let _ = git(repo, &["config", "--local", "--unset", key]);
                }
                Change::Removed
            }
        };
        actions.push(Action { what: key.into(), path: key.into(), change, warning: None });
    }
    // A section left with no key (every previous value was absent, so none was put back) goes too.
    for section in ["merge.beads", "merge.beads-append", "diff.beads"] {
        let keys = format!("^{}\\.", section.replace('.', "\\."));
        if !dry_run && git(repo, &["config", "--local", "--get-regexp", &keys]).is_err() {
            let _ = git(repo, &["config", "--local", "--remove-section", section]);
        }
    }
    Ok(())
}

/// Takes the attribute lines install appended out of their file (deleting a file install
/// created that holds nothing else), warning when the file is committed.
fn uninstall_attributes(repo: &Path, top: &Path, location: AttributesFile, state: &InstallState, dry_run: bool) -> Result<Option<Action>> {
    let path = location.path(repo)?;
    if let Some(content) = read_optional(&path)? {
        let mut out: Vec<u8> = Vec::with_capacity(content.len());
        let mut to_remove: Vec<&str> = state.attribute_lines_added.iter().map(String::as_str).collect();
        let recorded = to_remove.len();
        for line in content.split_inclusive(|&b| b == b'\n') {
            let t = String::from_utf8_lossy(block::trim_eol(line)).into_owned();
            if let Some(i) = to_remove.iter().position(|l| *l == t) {
                to_remove.remove(i);
                continue;
            }
            out.extend_from_slice(line);
        }
        // The newline install added goes with the lines it added (an install that failed
        // before writing them added neither).
        if state.attributes_newline_added && to_remove.len() < recorded && out.ends_with(b"\n") {
            out.pop();
        }
        let change = if state.attributes_created && out.is_empty() { Change::Deleted } else { Change::Removed };
        if !dry_run {
            if change == Change::Deleted {
                fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
            } else {
                crate::jsonl::write_atomic(&path, &out)?;
            }
        }
        let mut action = Action::new("attributes", &path, change);
        if location == AttributesFile::WorkTree && tracked(top, &path) {
            let rel = path.strip_prefix(top).unwrap_or(&path).display().to_string();
            action.warning = Some(if action.change == Change::Deleted {
                format!(
                    "{rel} is committed; uninstall {} it (install created it): commit its removal with `git add {rel} && git commit` at the top of the repository",
                    if dry_run { "would delete" } else { "deletes" }
                )
            } else {
                format!("{rel} is committed; uninstall takes our lines out of it: commit that with `git add {rel} && git commit` at the top of the repository")
            });
        }
        return Ok(Some(action));
    }
    Ok(None)
}

/// Whether the version of `path` committed at HEAD holds `needle`: our lines there reach every
/// teammate who pulls, so uninstall keeps them without `--team`.
fn committed_holding(top: &Path, path: &Path, needle: &str) -> bool {
    let Ok(rel) = path.strip_prefix(top) else { return false };
    let spec = format!("HEAD:{}", rel.to_string_lossy());
    let Ok(out) =
        std::process::Command::new("git").args(["cat-file", "blob", &spec]).current_dir(top).stdin(std::process::Stdio::null()).output()
    else {
        return false;
    };
    out.status.success() && memchr::memmem::find(&out.stdout, needle.as_bytes()).is_some()
}

/// Whether git tracks `path` (committed or staged) in the repository at `top`.
fn tracked(top: &Path, path: &Path) -> bool {
    git(top, &[std::ffi::OsStr::new("ls-files"), "--error-unmatch".as_ref(), "--".as_ref(), path.as_os_str()]).is_ok()
}

/// `bd-sync hook NAME [ARGS]`: runs our block for `hook` (the entry point hook managers call).
/// Fail-open: whatever happens, the caller exits 0.
pub fn run_hook(hook: Hook, args: &[String], bin_dir: &Path) -> Result<()> {
    let mut args = args.to_vec();
    // pre-commit passes git's checkout arguments in the environment, not as arguments.
    if hook == Hook::PostCheckout && args.len() < 3 {
        let env = |k: &str| std::env::var(k).unwrap_or_default();
        args = vec![env("PRE_COMMIT_FROM_REF"), env("PRE_COMMIT_TO_REF"), env("PRE_COMMIT_CHECKOUT_TYPE")];
    }
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(hook.block(&Binaries::Dir(bin_dir.to_path_buf())))
        .arg(hook.file_name())
        .args(&args)
        .stdin(std::process::Stdio::null())
        .status()
        .context("running sh")?;
    if !status.success() {
        bail!("the {} block exited with {status}", hook.file_name());
    }
    Ok(())
}

mod health;
pub use health::health;
