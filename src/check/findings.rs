//! What `check` reports: each finding's kind (a stable name programs branch on), severity,
//! place, message and fix, and the report with its counts. Kept apart from the checks
//! themselves, which also serve `install::health`.

use serde::Serialize;

use crate::fix::Fix;

/// What kind of problem a finding is. Serialised as its [name](FindingKind::name)
/// (`"dangling-dependency"`); the names are stable, programs branch on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FindingKind {
    /// An id on more than one line.
    DuplicateId,
    /// A dependency on an id that is not in the file (bd's `external:<project>:<id>` references
    /// are never reported: they name another project's issue).
    DanglingDependency,
    /// A cycle of `blocks` dependencies: none of its issues can ever be ready.
    DependencyCycle,
    /// Status `closed` without `closed_at`.
    ClosedWithoutClosedAt,
    /// `closed_at` on an issue that is not closed.
    ClosedAtOnOpenIssue,
    /// A leftover git conflict marker.
    ConflictMarker,
    /// A line that is not a JSON object with a string `id`.
    MalformedLine,
    /// A status outside [`KNOWN_STATUSES`].
    UnknownStatus,
    /// More than one pinned `<role> Handoff` bead with the same title.
    DuplicatePinnedHandoff,
    /// Two different comments of one issue share an id (br refuses the file).
    DuplicateCommentId,
    /// Two issues each carry a comment with the same id (importers renumber one).
    SharedCommentId,
    /// A key repeated inside one record.
    DuplicateKey,
    /// A derived count (`dependency_count`, `dependent_count`, `comment_count`) or computed
    /// `parent` that disagrees with the file.
    StaleDerivedField,
    /// The attributes route the file to `merge=beads` but the driver is not configured.
    DriverMissing,
    /// The driver's command lacks `%O %A %B`.
    DriverPlaceholders,
    /// The driver's program (`bd-merge`) no longer exists where the configuration says: every
    /// merge of the issues file fails with "not found".
    DriverMissingBinary,
    /// Git still marks the issues file as conflicted although it holds no conflict markers (a
    /// merge driver that failed leaves ours as it was).
    UnresolvedConflict,
    /// The issues file is not routed to the driver.
    AttributeMissing,
    /// The hooks directory is shared with other repositories.
    HooksDirShared,
    /// A hook we installed is gone.
    HookMissing,
    /// A hook block from an older version.
    HookOutdated,
    /// A hook file git cannot execute.
    HookNotExecutable,
    /// A block git never runs (a renamed file, an unused directory, below other code).
    HookUnreachable,
    /// A hook manager's configuration lacks our jobs.
    ManagerConfigMissing,
    /// A hook manager has not installed one of our hook types.
    ManagerHookMissing,
    /// A hook written for another interpreter (Python, Node, ...) that does not call our hook
    /// entry point: our POSIX sh block cannot go in it.
    HookForeignInterpreter,
    /// A hook file that is a symbolic link out of the repository (or to something that is not
    /// a regular file): install does not edit it.
    HookSymlinkOutside,
    /// Merges in this clone overrode values in the last day that nobody has listed with
    /// `bd-merge review` yet (a note: nothing is wrong with the file).
    UnreviewedOverrides,
    /// A tracker's database (br's `.beads/*.db`, bd's `.beads/dolt/`) holds edits the issues file
    /// lacks: committing the file now undoes them in every clone that imports it.
    ExportStale,
    /// `core.hooksPath` sends git to a hooks directory that holds none of our blocks (another
    /// tool took over the hooks).
    HooksPathWithoutBlocks,
    /// A hook manager is configured to skip our job (lefthook's `skip`, `LEFTHOOK_EXCLUDE`,
    /// pre-commit's `SKIP`).
    ManagerSkipsBlock,
    /// Where the notifier's URL, workspace and source come from (the environment or git config):
    /// a note, so a hook run from another shell is no surprise.
    NotifySettings,
    /// The git–issue bridge is turned off (`BEADS_BRIDGE`, `git config beads.bridge`): a note.
    BridgeOff,
    /// A line br 0.7.6's import refuses (and with it the whole file): a value past br's bounds,
    /// a label br rejects, a `closed_at` before `created_at`, ... in br's own words. An error
    /// where br keeps the clone's issues (its database beside the file), else a warning (a bd
    /// project's file may hold such lines and bd takes them).
    BrRefuses,
    /// `.beads/MIGRATION-FREEZE` exists (bd 1.3 is migrating its database): the hooks import,
    /// export and flush nothing until it is gone. A note.
    MigrationFreeze,
    /// A remote is on a GitLab host, whose server-side merges run the driver only where an
    /// administrator registered it (never on GitLab.com). A note.
    GitlabRemote,
    /// jj manages the repository: it runs no merge driver and no hook, only the merge tool it is
    /// asked for. A note.
    JjRepository,
}

impl FindingKind {
    /// How serious the kind is. Errors make `check` exit 1; warnings do so only with `--strict`.
    pub fn severity(self) -> Severity {
        use FindingKind::*;
        match self {
            // Data that tools refuse, mangle or never merge.
            ConflictMarker | MalformedLine | DuplicateCommentId | DependencyCycle | UnresolvedConflict => Severity::Error,
            // An installation that silently line-merges or skips our hooks.
            DriverMissing
            | DriverPlaceholders
            | DriverMissingBinary
            | AttributeMissing
            | HookMissing
            | HookOutdated
            | HookNotExecutable
            | HookUnreachable
            | ManagerConfigMissing
            | ManagerHookMissing
            | HookForeignInterpreter
            | HookSymlinkOutside
            | HooksPathWithoutBlocks
            | ManagerSkipsBlock => Severity::Error,
            // Worth fixing, and every tool copes: real, healthy files have them.
            DuplicateId
            | DanglingDependency
            | ClosedWithoutClosedAt
            | ClosedAtOnOpenIssue
            | UnknownStatus
            | DuplicatePinnedHandoff
            | SharedCommentId
            | DuplicateKey
            | StaleDerivedField
            | HooksDirShared
            | ExportStale
            // An error where br keeps this clone's issues (`check` raises it then).
            | BrRefuses => Severity::Warning,
            // Nothing is wrong; something to look at.
            UnreviewedOverrides | NotifySettings | BridgeOff | MigrationFreeze | GitlabRemote | JjRepository => Severity::Note,
        }
    }

    /// The kebab-case name, as in the JSON.
    pub fn name(self) -> &'static str {
        use FindingKind::*;
        match self {
            DuplicateId => "duplicate-id",
            DanglingDependency => "dangling-dependency",
            DependencyCycle => "dependency-cycle",
            ClosedWithoutClosedAt => "closed-without-closed-at",
            ClosedAtOnOpenIssue => "closed-at-on-open-issue",
            ConflictMarker => "conflict-marker",
            DriverMissingBinary => "driver-missing-binary",
            UnresolvedConflict => "unresolved-conflict",
            MalformedLine => "malformed-line",
            UnknownStatus => "unknown-status",
            DuplicatePinnedHandoff => "duplicate-pinned-handoff",
            DuplicateCommentId => "duplicate-comment-id",
            SharedCommentId => "shared-comment-id",
            DuplicateKey => "duplicate-key",
            StaleDerivedField => "stale-derived-field",
            DriverMissing => "driver-missing",
            DriverPlaceholders => "driver-placeholders",
            AttributeMissing => "attribute-missing",
            HooksDirShared => "hooks-dir-shared",
            HookMissing => "hook-missing",
            HookOutdated => "hook-outdated",
            HookNotExecutable => "hook-not-executable",
            HookUnreachable => "hook-unreachable",
            ManagerConfigMissing => "manager-config-missing",
            ManagerHookMissing => "manager-hook-missing",
            HookForeignInterpreter => "hook-foreign-interpreter",
            HookSymlinkOutside => "hook-symlink-outside",
            UnreviewedOverrides => "unreviewed-overrides",
            NotifySettings => "notify-settings",
            BridgeOff => "bridge-off",
            MigrationFreeze => "migration-freeze",
            GitlabRemote => "gitlab-remote",
            JjRepository => "jj-repository",
            BrRefuses => "br-refuses",
            ExportStale => "export-stale",
            HooksPathWithoutBlocks => "hooks-path-without-blocks",
            ManagerSkipsBlock => "manager-skips-block",
        }
    }
}

impl Serialize for FindingKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl std::fmt::Display for FindingKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// For information: never a reason to fail, not even with `--strict`.
    Note,
    /// Worth a look; the file works with every tool.
    Warning,
    /// A tool refuses or mangles the file, or the installation does not protect it.
    Error,
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// One problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What kind of problem (stable name).
    pub kind: FindingKind,
    /// The kind's severity.
    pub severity: Severity,
    /// The issue concerned, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// 1-based line numbers concerned.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<usize>,
    /// What is wrong, for a human. A binary appends the worded [`Finding::fix`] to it before
    /// showing or serialising it.
    pub message: String,
    /// What the user can do, when it is a command (worded by the binary).
    #[serde(skip)]
    pub fix: Option<Fix>,
}

impl Finding {
    /// A finding of `kind`, about `id` and `lines` when known.
    pub fn new(kind: FindingKind, id: Option<&str>, lines: Vec<usize>, message: String) -> Finding {
        Finding { kind, severity: kind.severity(), id: id.map(str::to_owned), lines, message, fix: None }
    }

    /// The same finding, with what the user can do.
    pub fn with_fix(self, fix: Fix) -> Finding {
        Finding { fix: Some(fix), ..self }
    }
}

/// What `check` found, with counts for the summary line.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// The file checked.
    pub file: String,
    /// Every finding, file problems first, in line order.
    pub findings: Vec<Finding>,
    /// Findings of severity error.
    pub errors: usize,
    /// Findings of severity warning.
    pub warnings: usize,
    /// Findings of severity note (they never fail `check`).
    pub notes: usize,
    /// Dependencies on other projects (`external:<project>:<id>`), which are not checked.
    pub external_references: usize,
    /// Findings per kind.
    pub by_kind: std::collections::BTreeMap<FindingKind, usize>,
}

impl CheckReport {
    /// Counts the findings.
    pub fn new(file: String, findings: Vec<Finding>, external_references: usize) -> CheckReport {
        let errors = findings.iter().filter(|f| f.severity == Severity::Error).count();
        let mut by_kind = std::collections::BTreeMap::new();
        for f in &findings {
            *by_kind.entry(f.kind).or_insert(0) += 1;
        }
        let notes = findings.iter().filter(|f| f.severity == Severity::Note).count();
        CheckReport { file, warnings: findings.len() - errors - notes, notes, errors, findings, external_references, by_kind }
    }

    /// One line: `N errors, M warnings (K dangling-dependency, ...); E external references not checked`.
    pub fn summary(&self) -> String {
        let kinds: Vec<String> = self.by_kind.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let mut s = format!(
            "{} error{}, {} warning{}",
            self.errors,
            if self.errors == 1 { "" } else { "s" },
            self.warnings,
            if self.warnings == 1 { "" } else { "s" }
        );
        if self.notes > 0 {
            s.push_str(&format!(", {} note{}", self.notes, if self.notes == 1 { "" } else { "s" }));
        }
        if !kinds.is_empty() {
            s.push_str(&format!(" ({})", kinds.join(", ")));
        }
        if self.external_references > 0 {
            s.push_str(&format!("; {} external reference(s) to other projects not checked", self.external_references));
        }
        s
    }
}
