//! Fuzz target: a conflicted issues file as `bd-merge resolve` reads it: the conflict-marker
//! parser rebuilds the three sides, which are then merged as the driver would; and `dedupe` of the
//! same bytes. Any panic, abort or hang is a bug: the file is untrusted.
#![no_main]

use beads_git::merge::{self, repair, ConflictPolicy, MergeOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some([base, ours, theirs])) = repair::sides_from_markers(data) {
        for policy in [ConflictPolicy::Newest, ConflictPolicy::Markers] {
            let options = MergeOptions { policy, ..MergeOptions::default() };
            if let Ok(merged) = merge::merge(&base, &ours, &theirs, &options) {
                let mut out = Vec::new();
                merged.write_to(&mut out).expect("writing to memory");
            }
        }
    }
    let _ = repair::dedupe(data, &MergeOptions::default());
});
