//! Two issues under one id, given the ids the tracker itself gives them.
//!
//! Two clones that each create an issue can hand out the same id: two agents adding a subtask to
//! one epic both create `P.1`, and a short hash id can come up twice. Those are two issues, not
//! one issue edited twice, and no policy may keep one and drop the other. br 0.7 settles them in
//! its own merge, and a file merged by us must hold the same ids as one merged by br, or the same
//! history gives different files depending on who merged it. So this module follows br's rules
//! exactly (docs/trackers.md, "Two issues under one id"): the same id with another `created_at` is
//! two issues; every issue touching such an id is grouped with the other side's record of it
//! (found by id and creation time, or by creation time, creator and title when a clone already
//! moved it); groups are taken earliest-created first, each taking an id it already has (one no
//! later group has, if it can), and a group left without one gets a new id: the next free child
//! number for `P.N`, a fresh hash id of the same prefix and length for a root id. The sides are then
//! re-keyed (ids and the references each side wrote) and merged as usual. The answer depends only
//! on the three inputs, so clones converge whichever order they merge in.

use std::borrow::Cow;
use std::collections::BTreeSet;

use rustc_hash::{FxHashMap, FxHashSet};

use super::types::Side;
use crate::jsonl::{self, Jsonl};
use crate::record::{json_string, key_order, parse_json_str, record_key, render_entries, split_array, Entry, Key, RawObject};
use crate::timestamp::{self, Instant};

/// What identifies an issue across ids: its creation (as an instant) and the rest of what a new
/// hash id is minted from.
#[derive(Debug, Clone)]
pub struct Facts {
    /// The id the record has.
    pub id: String,
    /// `created_at`, as an instant.
    pub created: Instant,
    /// `created_by` (absent or `null`: `None`).
    pub created_by: Option<String>,
    /// `title` (absent: empty).
    pub title: String,
    /// `description` (absent or `null`: `None`).
    pub description: Option<String>,
}

impl Facts {
    /// The facts of a record line; `None` when it is not a record or has no `created_at` that
    /// parses (br cannot hold such a record, so it never takes part in a collision).
    pub fn of(line: &[u8]) -> Option<Facts> {
        let obj = RawObject::parse(line).ok()?;
        let text = |key: &str| -> Option<String> {
            let raw = obj.get(key)?;
            if raw == "null" {
                return None;
            }
            parse_json_str(raw).map(Cow::into_owned)
        };
        let created = timestamp::parse(&text("created_at")?)?;
        Some(Facts {
            id: text("id")?,
            created,
            created_by: text("created_by"),
            title: text("title").unwrap_or_default(),
            description: text("description"),
        })
    }

    /// br's identity key: the creation and a non-empty creator.
    fn key(&self) -> (Instant, Option<&str>) {
        (self.created, self.created_by.as_deref().filter(|c| !c.is_empty()))
    }
}

/// One side's issues by id (the first line of a repeated id), with the facts read so far.
struct Issues<'a> {
    lines: FxHashMap<String, &'a [u8]>,
    facts: FxHashMap<String, Option<Facts>>,
}

impl<'a> Issues<'a> {
    fn of(content: &'a [u8]) -> Issues<'a> {
        let mut lines = FxHashMap::default();
        Jsonl::for_each_line(content, |line| {
            if let Ok(Key::Issue(id)) = record_key(line.bytes) {
                lines.entry(id.into_owned()).or_insert(line.bytes);
            }
        });
        Issues { lines, facts: FxHashMap::default() }
    }

    /// Reads the facts of `id` (once).
    fn read(&mut self, id: &str) {
        if let Some(&line) = self.lines.get(id) {
            if !self.facts.contains_key(id) {
                self.facts.insert(id.to_owned(), Facts::of(line));
            }
        }
    }

    fn facts(&self, id: &str) -> Option<&Facts> {
        self.facts.get(id)?.as_ref()
    }

    /// The creation of `id`, read if need be.
    fn created(&mut self, id: &str) -> Option<Instant> {
        self.read(id);
        self.facts(id).map(|f| f.created)
    }
}

/// A collision as the merge reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    /// The id both sides hold for two issues.
    pub id: String,
    /// The side whose issue keeps the id.
    pub kept: Side,
    /// The id the other side's issue has in the result.
    pub moved_to: String,
}

/// How the three inputs are re-keyed before they are merged.
#[derive(Debug, Default)]
pub struct Plan {
    /// Old id -> new id, for base, ours and theirs.
    pub renames: [FxHashMap<String, String>; 3],
    /// Base records left out: they belong to an issue only one side carries (a base copy would
    /// read as a deletion on the side that never had the issue under that id).
    pub base_drops: FxHashSet<String>,
    /// The collisions, by id.
    pub collisions: Vec<Collision>,
}

/// What [`plan`] found.
#[derive(Debug)]
pub enum Planned {
    /// No id names two issues.
    Nothing,
    /// The re-keying that gives each issue its own id.
    Plan(Plan),
    /// Ids naming two issues where no free id can be minted (an id br cannot parse, or every
    /// candidate taken): they are left to a human, whole.
    Unresolved(Vec<String>),
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Which {
    Ours,
    Theirs,
}

impl Which {
    fn index(self) -> usize {
        match self {
            Which::Ours => 0,
            Which::Theirs => 1,
        }
    }
    fn other(self) -> Which {
        match self {
            Which::Ours => Which::Theirs,
            Which::Theirs => Which::Ours,
        }
    }
}

/// One issue involved in a collision, as each side carries it.
#[derive(Default, Clone, Copy)]
struct Group<'f> {
    ours: Option<&'f Facts>,
    theirs: Option<&'f Facts>,
}

impl<'f> Group<'f> {
    fn issues(&self) -> impl Iterator<Item = &'f Facts> {
        self.ours.into_iter().chain(self.theirs)
    }
    fn created(&self) -> Instant {
        self.issues().map(|f| f.created).min().unwrap_or(Instant { seconds: 0, nanos: 0 })
    }
    /// The ids it has on either side, smallest first.
    fn claimed(&self) -> BTreeSet<&'f str> {
        self.issues().map(|f| f.id.as_str()).collect()
    }
    /// The same record whichever side is which, so every clone mints alike.
    fn representative(&self) -> Option<&'f Facts> {
        self.issues().min_by(|a, b| a.title.cmp(&b.title).then_with(|| a.description.cmp(&b.description)).then_with(|| a.id.cmp(&b.id)))
    }
    fn set(&mut self, side: Which, facts: &'f Facts) {
        match side {
            Which::Ours => self.ours = Some(facts),
            Which::Theirs => self.theirs = Some(facts),
        }
    }
}

/// Records by br's identity key (creation and creator).
type ByIdentity<'f> = FxHashMap<(Instant, Option<&'f str>), Vec<&'f Facts>>;

/// The other side's record of an issue under any id (br's `CounterpartIndex`): the same id with
/// the same creation, or else the one record the other side holds without its twin that has the
/// same creation, creator and title, when this side holds exactly one such record too.
struct Counterparts<'f> {
    sides: [&'f Issues<'f>; 2],
    /// Per side: records not paired by id, by identity key.
    unpaired: [ByIdentity<'f>; 2],
}

impl<'f> Counterparts<'f> {
    fn new(ours: &'f Issues<'f>, theirs: &'f Issues<'f>) -> Self {
        let index = |own: &'f Issues<'f>, other: &'f Issues<'f>| {
            let mut map: ByIdentity<'f> = FxHashMap::default();
            for facts in own.facts.values().flatten() {
                if other.facts(&facts.id).is_some_and(|twin| twin.created == facts.created) {
                    continue;
                }
                map.entry(facts.key()).or_default().push(facts);
            }
            map
        };
        Counterparts { sides: [ours, theirs], unpaired: [index(ours, theirs), index(theirs, ours)] }
    }

    fn of(&self, side: Which, issue: &Facts) -> Option<&'f Facts> {
        let (own, other) = (side.index(), side.other().index());
        if let Some(twin) = self.sides[other].facts(&issue.id) {
            if twin.created == issue.created {
                return Some(twin);
            }
        }
        let same_title = |facts: &&&Facts| facts.title == issue.title;
        let matches: Vec<&&Facts> = self.unpaired[other].get(&issue.key())?.iter().filter(same_title).collect();
        let own_matches = self.unpaired[own].get(&issue.key()).map_or(0, |v| v.iter().filter(same_title).count());
        match matches.as_slice() {
            [only] if own_matches == 1 => Some(**only),
            _ => None,
        }
    }
}

/// Finds the ids that name two issues on the two sides and decides where each issue goes.
/// Reads the facts only of records that differ between the sides.
pub fn plan(base: &[u8], ours: &[u8], theirs: &[u8]) -> Planned {
    let (mut b, mut o, mut t) = (Issues::of(base), Issues::of(ours), Issues::of(theirs));
    // Same id, another creation: two issues. Every record a side holds without an identical twin
    // is read, as only those can be a collision or the other side's record of one.
    let mut collided: BTreeSet<String> = BTreeSet::new();
    let ids: Vec<String> = o.lines.keys().cloned().collect();
    for id in &ids {
        match t.lines.get(id) {
            Some(other) if *other == o.lines[id] => continue,
            Some(_) => {
                let (x, y) = (o.created(id), t.created(id));
                if x.is_some() && y.is_some() && x != y {
                    collided.insert(id.clone());
                }
            }
            None => o.read(id),
        }
    }
    if collided.is_empty() {
        return Planned::Nothing;
    }
    let only_theirs: Vec<String> = t.lines.keys().filter(|id| !o.lines.contains_key(*id)).cloned().collect();
    for id in &only_theirs {
        t.read(id);
    }
    let (o, t) = (o, t);
    let counterparts = Counterparts::new(&o, &t);
    let facts_of = |side: Which, id: &str| if side == Which::Ours { o.facts(id) } else { t.facts(id) };

    // The groups, built as br builds them (its queue order decides ties).
    let mut groups: Vec<Group<'_>> = Vec::new();
    let mut group_of: FxHashMap<(Which, &str), usize> = FxHashMap::default();
    let mut component: BTreeSet<&str> = BTreeSet::new();
    let mut queue: Vec<&str> = collided.iter().map(String::as_str).collect();
    queue.reverse();
    while let Some(id) = queue.pop() {
        if !component.insert(id) {
            continue;
        }
        for side in [Which::Ours, Which::Theirs] {
            let Some(issue) = facts_of(side, id) else { continue };
            if group_of.contains_key(&(side, id)) {
                continue;
            }
            let other = side.other();
            let partner = counterparts.of(side, issue).filter(|p| !group_of.contains_key(&(other, p.id.as_str())));
            let at = groups.len();
            group_of.insert((side, issue.id.as_str()), at);
            let mut group = Group::default();
            group.set(side, issue);
            if let Some(partner) = partner {
                group_of.insert((other, partner.id.as_str()), at);
                group.set(other, partner);
                queue.push(partner.id.as_str());
            }
            groups.push(group);
        }
    }

    // Every id any input holds is taken.
    let mut taken = Taken::new([&b, &o, &t].into_iter().flat_map(|side| side.lines.keys().cloned()));
    let Some(assigned) = assign(&groups, &mut taken) else {
        return Planned::Unresolved(collided.into_iter().collect());
    };

    let mut plan = Plan::default();
    for (group, to) in groups.iter().zip(&assigned) {
        for (slot, facts) in [(1, group.ours), (2, group.theirs)] {
            if let Some(f) = facts.filter(|f| f.id != *to) {
                plan.renames[slot].insert(f.id.clone(), to.clone());
            }
        }
    }
    // A base record under a contested id is the ancestor of the issue it was created as; it
    // stays one only when both sides still carry that issue, and references to it follow it.
    let mut base_targets: FxHashSet<&str> = FxHashSet::default();
    for &id in &component {
        b.read(id);
        let Some(base) = b.facts(id) else {
            if b.lines.contains_key(id) {
                plan.base_drops.insert(id.to_owned());
            }
            continue;
        };
        let owner = [Which::Ours, Which::Theirs]
            .into_iter()
            .filter_map(|side| group_of.get(&(side, id)).copied())
            .find(|&g| groups[g].issues().any(|f| f.id == id && f.created == base.created))
            .or_else(|| (0..groups.len()).find(|&g| groups[g].issues().any(|f| f.key() == base.key() && f.title == base.title)));
        if let Some(owner) = owner {
            if assigned[owner] != id {
                plan.renames[0].insert(id.to_owned(), assigned[owner].clone());
            }
        }
        let keep = owner.is_some_and(|g| groups[g].ours.is_some() && groups[g].theirs.is_some() && base_targets.insert(&assigned[g]));
        if !keep {
            plan.base_drops.insert(id.to_owned());
        }
    }
    for id in &collided {
        let (Some(&og), Some(&tg)) = (group_of.get(&(Which::Ours, id.as_str())), group_of.get(&(Which::Theirs, id.as_str()))) else {
            continue;
        };
        let (kept, moved_group) = if assigned[og] == *id {
            (Side::Ours, tg)
        } else if assigned[tg] == *id || groups[tg].created() < groups[og].created() {
            (Side::Theirs, og)
        } else {
            (Side::Ours, tg)
        };
        let moved_to = assigned[moved_group].clone();
        plan.collisions.push(Collision { id: id.clone(), kept, moved_to });
    }
    Planned::Plan(plan)
}

/// The ids in use, with the highest child number under each parent as br counts it (the first
/// number after `parent.`, grandchildren included): built in one pass, kept up to date as ids are
/// handed out, so a thousand collisions under one parent cost no more than one.
#[derive(Debug, Default)]
pub struct Taken {
    ids: FxHashSet<String>,
    highest: FxHashMap<String, u32>,
}

impl Taken {
    /// The ids in use.
    pub fn new(ids: impl IntoIterator<Item = String>) -> Taken {
        let mut taken = Taken::default();
        for id in ids {
            taken.insert(id);
        }
        taken
    }

    /// Whether `id` is in use.
    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    /// Notes `id` in use.
    pub fn insert(&mut self, id: String) {
        for (at, _) in id.match_indices('.') {
            // br parses with `str::parse::<u32>`, which takes a leading `+` too.
            if let Some(n) = id[at + 1..].split('.').next().and_then(|n| n.parse::<u32>().ok()) {
                let highest = self.highest.entry(id[..at].to_owned()).or_insert(0);
                *highest = (*highest).max(n);
            }
        }
        self.ids.insert(id);
    }

    /// The highest child number in use under `parent` (0 when none).
    fn highest_child(&self, parent: &str) -> u32 {
        self.highest.get(parent).copied().unwrap_or(0)
    }
}

/// Earliest-created first, each group takes an id it already has (preferring one no later group
/// has), or else a newly minted one. `None` when no free id can be minted.
fn assign(groups: &[Group<'_>], taken: &mut Taken) -> Option<Vec<String>> {
    let mut order: Vec<usize> = (0..groups.len()).collect();
    order.sort_by(|&a, &b| groups[a].created().cmp(&groups[b].created()).then_with(|| groups[a].claimed().cmp(&groups[b].claimed())));
    // Where in that order each id is last claimed: "a later group holds it" in one lookup.
    let mut last_claim: FxHashMap<&str, usize> = FxHashMap::default();
    for (position, &g) in order.iter().enumerate() {
        for id in groups[g].claimed() {
            last_claim.insert(id, position);
        }
    }
    let mut claimed_by_earlier: FxHashSet<&str> = FxHashSet::default();
    let mut assigned: Vec<Option<String>> = vec![None; groups.len()];
    for (position, &g) in order.iter().enumerate() {
        let group = &groups[g];
        let free: Vec<&str> = group.claimed().into_iter().filter(|id| !claimed_by_earlier.contains(id)).collect();
        let later_claims = |id: &str| last_claim.get(id).is_some_and(|&last| last > position);
        let choice = free.iter().find(|id| !later_claims(id)).or_else(|| free.first()).copied();
        let id = match choice {
            Some(id) => {
                claimed_by_earlier.insert(id);
                id.to_owned()
            }
            None => {
                let original = group.claimed().into_iter().next()?;
                mint(original, group.representative()?, taken)?
            }
        };
        taken.insert(id.clone());
        assigned[g] = Some(id);
    }
    assigned.into_iter().collect()
}

/// An id split as br splits it: the prefix before the last `-`, the hash, and the child numbers
/// after it (`bd-a1b.2.3`: `bd`, `a1b`, `[2, 3]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedId {
    /// Before the last `-`.
    pub prefix: String,
    /// Base-36 digits.
    pub hash: String,
    /// The child numbers.
    pub children: Vec<u32>,
}

impl ParsedId {
    /// The parent's id of a child id.
    pub fn parent(&self) -> Option<String> {
        let (_, path) = self.children.split_last()?;
        let mut parent = format!("{}-{}", self.prefix, self.hash);
        for n in path {
            parent.push('.');
            parent.push_str(&n.to_string());
        }
        Some(parent)
    }
}

/// Parses an id with br 0.7.6's rules (`parse_id`): a prefix of at most 64 characters of
/// `[a-z0-9_\-.:#]`, a `-`, a hash of 1 to 40 lowercase base-36 digits, and `.N` child numbers
/// that fit in 32 bits. `None` for anything else.
pub fn parse_id(id: &str) -> Option<ParsedId> {
    let dash = id.rfind('-')?;
    let (prefix, rest) = (&id[..dash], &id[dash + 1..]);
    if prefix.is_empty() || rest.is_empty() || prefix.len() > 64 {
        return None;
    }
    if !prefix.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.' | ':' | '#')) {
        return None;
    }
    let mut parts = rest.split('.');
    let hash = parts.next()?;
    if hash.is_empty() || hash.len() > 40 || !hash.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        return None;
    }
    let mut children = Vec::new();
    for part in parts {
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        children.push(part.parse::<u32>().ok()?);
    }
    Some(ParsedId { prefix: prefix.to_owned(), hash: hash.to_owned(), children })
}

/// A free id for an issue that lost a collision (br's `mint_relocated_issue_id`): for a child id,
/// the child number one past the highest any taken id has under the same parent (the first
/// number after the parent's `.`, grandchildren included), skipping taken ones; for a root id, a
/// hash id of the same prefix and hash length (at least 3) from [`id_seed`] with the first nonce
/// whose id is free. `None` when the id does not parse or no id is free.
pub fn mint(original: &str, facts: &Facts, taken: &Taken) -> Option<String> {
    let parsed = parse_id(original)?;
    if let Some(parent) = parsed.parent() {
        let mut number = taken.highest_child(&parent).checked_add(1)?;
        loop {
            let candidate = format!("{parent}.{number}");
            if !taken.contains(&candidate) {
                return Some(candidate);
            }
            number = number.checked_add(1)?;
        }
    }
    let length = parsed.hash.len().max(3);
    (0..10_000u32).find_map(|nonce| {
        let seed = id_seed(&facts.title, facts.description.as_deref(), facts.created_by.as_deref(), facts.created, nonce);
        let candidate = format!("{}-{}", parsed.prefix, id_hash(&seed, length));
        (!taken.contains(&candidate)).then_some(candidate)
    })
}

/// br's seed for a hash id (`generate_id_seed`): title, description, creator, the creation in
/// nanoseconds since the epoch (0 when out of range) and the nonce, each written `len:value`.
pub fn id_seed(title: &str, description: Option<&str>, creator: Option<&str>, created: Instant, nonce: u32) -> String {
    let nanos = created.seconds.checked_mul(1_000_000_000).and_then(|s| s.checked_add(i64::from(created.nanos))).unwrap_or(0);
    let mut seed = String::new();
    for part in [title, description.unwrap_or(""), creator.unwrap_or(""), &nanos.to_string(), &nonce.to_string()] {
        seed.push_str(&part.len().to_string());
        seed.push(':');
        seed.push_str(part);
    }
    seed
}

/// br's hash of a seed (`compute_id_hash`): SHA-256, the first 8 bytes as a big-endian number
/// written in base 36, its last `length` digits (zero-padded on the left when shorter).
pub fn id_hash(seed: &str, length: usize) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, seed.as_bytes());
    let mut num = 0u64;
    for &byte in digest.as_ref().iter().take(8) {
        num = (num << 8) | u64::from(byte);
    }
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut digits = Vec::new();
    loop {
        digits.push(ALPHABET[usize::try_from(num % 36).unwrap_or(0)]);
        num /= 36;
        if num == 0 {
            break;
        }
    }
    while digits.len() < length {
        digits.push(b'0');
    }
    digits.truncate(length);
    digits.reverse();
    String::from_utf8(digits).unwrap_or_default()
}

/// The file `content` with `renames` applied (br's `apply_collision_renames`): a record whose id
/// moves takes its new id, and every reference a record holds to a moved id (a dependency's
/// `issue_id` and `depends_on_id`, a comment's `issue_id`, bd's `parent`) follows it; the records
/// under an id in `drops` are left out. Every other line keeps its bytes, and the file its layout.
pub fn rekey(content: &[u8], renames: &FxHashMap<String, String>, drops: &FxHashSet<String>, go_style: bool) -> Vec<u8> {
    let file = Jsonl::split(content);
    // (key, line); a file sorted by key (as the trackers write it) stays sorted.
    let mut lines: Vec<(Option<String>, Cow<'_, [u8]>)> = Vec::with_capacity(file.lines.len());
    for line in &file.lines {
        let key = record_key(line.bytes).ok();
        let id = match &key {
            Some(Key::Issue(id)) => Some(id.as_ref()),
            _ => None,
        };
        if id.is_some_and(|id| drops.contains(id)) {
            continue;
        }
        let may_refer = id.is_some_and(|id| renames.contains_key(id)) || mentions_references(line.bytes);
        let text = match may_refer.then(|| rekey_record(line.bytes, renames, go_style)).flatten() {
            Some(text) => Cow::Owned(text.into_bytes()),
            None => Cow::Borrowed(line.bytes),
        };
        let key = key.map(|k| match k {
            Key::Issue(id) => renames.get(id.as_ref()).cloned().unwrap_or_else(|| id.into_owned()),
            other => other.into_string_key().into_owned(),
        });
        lines.push((key, text));
    }
    let sorted = |lines: &[(Option<String>, Cow<'_, [u8]>)], keys: &dyn Fn(&Option<String>) -> Option<String>| {
        lines.windows(2).all(|w| match (keys(&w[0].0), keys(&w[1].0)) {
            (Some(a), Some(b)) => key_order(&a, &b).is_le(),
            _ => false,
        })
    };
    if !renames.is_empty() && !sorted(&lines, &|k| k.clone()) {
        // Sorted before the renames (the keys under their old ids): sort again.
        let old: FxHashMap<&str, &str> = renames.iter().map(|(from, to)| (to.as_str(), from.as_str())).collect();
        let before = |k: &Option<String>| k.as_ref().map(|k| old.get(k.as_str()).map_or_else(|| k.clone(), |from| (*from).to_owned()));
        if sorted(&lines, &before) {
            lines.sort_by(|a, b| match (&a.0, &b.0) {
                (Some(x), Some(y)) => key_order(x, y),
                _ => std::cmp::Ordering::Equal,
            });
        }
    }
    let mut out = Vec::with_capacity(content.len() + 64);
    // Writing to a Vec cannot fail.
    let _ = jsonl::write_lines(&mut out, file.layout, lines.iter().map(|(_, l)| l.as_ref()));
    out
}

/// The record `line` whose id is `from` under the id `to`, with every reference in it to `from`
/// following (its dependencies' and comments' `issue_id`); `None` when the line is not a record.
pub fn rename_record(line: &[u8], from: &str, to: &str, go_style: bool) -> Option<String> {
    let renames: FxHashMap<String, String> = std::iter::once((from.to_owned(), to.to_owned())).collect();
    rekey_record(line, &renames, go_style)
}

/// Whether two records under one id, both absent from the base, are two issues created
/// concurrently: both carry `created_at` and the two differ (as instants when both parse). Then
/// `Some(order)` of `a` against `b` by creation (`Less`: `a` was created first), ties in time
/// broken by content (compact JSON with sorted keys), so the answer never depends on which side is
/// which.
pub fn concurrent_creation(a: &serde_json::Value, b: &serde_json::Value) -> Option<std::cmp::Ordering> {
    let created = |v: &serde_json::Value| v.get("created_at").and_then(serde_json::Value::as_str).map(str::to_owned);
    let (ca, cb) = (created(a)?, created(b)?);
    let differ = match (timestamp::parse(&ca), timestamp::parse(&cb)) {
        (Some(x), Some(y)) => x != y,
        _ => ca != cb,
    };
    if !differ {
        return None;
    }
    Some(timestamp::compare(&ca, &cb).then_with(|| a.to_string().cmp(&b.to_string())))
}

/// Whether a record line may hold a reference to another issue (a fast textual pre-check).
fn mentions_references(line: &[u8]) -> bool {
    ["\"depends_on_id\"", "\"parent\"", "\"comments\""].iter().any(|key| memchr::memmem::find(line, key.as_bytes()).is_some())
}

/// One record with `renames` applied; `None` when nothing in it moved.
fn rekey_record(line: &[u8], renames: &FxHashMap<String, String>, go_style: bool) -> Option<String> {
    let obj = RawObject::parse(line).ok()?;
    let (colon, comma) = (obj.colon, obj.comma);
    let mut entries: Vec<Entry<'_>> = obj.entries;
    let mut changed = false;
    let moved = |raw: &str| parse_json_str(raw).and_then(|id| renames.get(id.as_ref())).map(|to| json_string(to, go_style));
    for key in ["id", "parent"] {
        if let Some(entry) = entries.iter_mut().rfind(|e| e.key == key) {
            if let Some(to) = moved(&entry.raw_value) {
                entry.raw_value = Cow::Owned(to);
                changed = true;
            }
        }
    }
    for (key, fields) in [("dependencies", &["issue_id", "depends_on_id"][..]), ("comments", &["issue_id"][..])] {
        let Some(entry) = entries.iter_mut().rfind(|e| e.key == key) else { continue };
        let Some(elements) = split_array(&entry.raw_value) else { continue };
        let mut any = false;
        let mut rendered = Vec::with_capacity(elements.len());
        for raw in elements {
            match RawObject::parse_str(raw) {
                Ok(mut element) => {
                    let mut this = false;
                    for field in fields {
                        if let Some(e) = element.entries.iter_mut().rfind(|e| e.key == *field) {
                            if let Some(to) = moved(&e.raw_value) {
                                e.raw_value = Cow::Owned(to);
                                this = true;
                            }
                        }
                    }
                    any |= this;
                    rendered.push(if this { element.render() } else { raw.to_owned() });
                }
                Err(_) => rendered.push(raw.to_owned()),
            }
        }
        if any {
            entry.raw_value = Cow::Owned(format!("[{}]", rendered.join(comma)));
            changed = true;
        }
    }
    changed.then(|| render_entries(&entries, colon, comma))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creation_order_is_symmetric() {
        use serde_json::json;
        let a = json!({"id": "p.1", "created_at": "2026-01-01T10:00:00Z", "title": "a"});
        let b = json!({"id": "p.1", "created_at": "2026-01-01T02:00:00-09:00", "title": "b"});
        assert_eq!(concurrent_creation(&a, &b), Some(std::cmp::Ordering::Less));
        assert_eq!(concurrent_creation(&b, &a), Some(std::cmp::Ordering::Greater));
        let same_instant = json!({"id": "p.1", "created_at": "2026-01-01T11:00:00+01:00", "title": "c"});
        assert_eq!(concurrent_creation(&a, &same_instant), None);
        assert_eq!(concurrent_creation(&a, &json!({"id": "p.1"})), None);
    }

    #[test]
    fn a_rename_takes_the_references_to_the_old_id_along() {
        let line = concat!(
            r#"{"id":"bd-a.1","title":"t","dependencies":[{"issue_id":"bd-a.1","#,
            r#""depends_on_id":"bd-a","type":"parent-child"}],"comments":[{"id":1,"#,
            r#""issue_id":"bd-a.1","text":"x"}]}"#
        )
        .as_bytes();
        let renamed = rename_record(line, "bd-a.1", "bd-a.2", false).expect("a record");
        assert_eq!(
            renamed,
            concat!(
                r#"{"id":"bd-a.2","title":"t","dependencies":[{"issue_id":"bd-a.2","#,
                r#""depends_on_id":"bd-a","type":"parent-child"}],"comments":[{"id":1,"#,
                r#""issue_id":"bd-a.2","text":"x"}]}"#
            )
        );
    }

    #[test]
    fn ids_parse_as_br_parses_them() {
        let p = parse_id("bd-a1b.2.3").expect("parses");
        assert_eq!((p.prefix.as_str(), p.hash.as_str(), p.children.as_slice()), ("bd", "a1b", &[2, 3][..]));
        assert_eq!(p.parent().as_deref(), Some("bd-a1b.2"));
        assert_eq!(parse_id("my-proj-x9").map(|p| p.prefix), Some("my-proj".into()));
        assert_eq!(parse_id("bd-a1b").and_then(|p| p.parent()), None);
        for bad in ["bd", "bd-", "-a1", "BD-a1", "bd-A1", "bd-a1.", "bd-a1.x", "bd-a1.99999999999", "bd-a_1"] {
            assert_eq!(parse_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_hash_is_the_last_digits_of_the_first_eight_bytes_in_base_36() {
        // SHA-256("abc") starts ba7816bf8f01cfea = 13436514500253700074 = 2u31avf0fasx6 in base 36.
        assert_eq!(id_hash("abc", 3), "sx6");
        assert_eq!(id_hash("abc", 13), "2u31avf0fasx6");
        assert_eq!(id_hash("abc", 20).len(), 20);
        assert!(id_hash("abc", 20).starts_with("0000000"));
        let created = timestamp::parse("2026-01-02T03:04:05.5Z").expect("parses");
        assert_eq!(id_seed("t", None, Some("me"), created, 7), "1:t0:2:me19:17673230455000000001:7");
    }
}
