//! Fuzz target: the three-way merge of three small files. The input is split in three at its
//! 0xFF bytes (a byte no UTF-8 text holds): base, ours, theirs; each conflict policy merges
//! them, and the append-only merge too. Any panic, abort or hang is a bug: all three are
//! untrusted.
#![no_main]

use beads_git::merge::{self, ConflictPolicy, MergeOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |&b| b == 0xFF);
    let (base, ours, theirs) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    for policy in [ConflictPolicy::Newest, ConflictPolicy::Ours, ConflictPolicy::Theirs, ConflictPolicy::Markers] {
        let options = MergeOptions { policy, ..MergeOptions::default() };
        if let Ok(merged) = merge::merge(base, ours, theirs, &options) {
            let mut out = Vec::new();
            merged.write_to(&mut out).expect("writing to memory");
        }
    }
    let _ = merge::merge_append_only(base, ours, theirs);
});
